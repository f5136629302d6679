"""Links."""
