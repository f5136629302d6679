"""Process faults: kill, stop, pause, rolling-restart."""
