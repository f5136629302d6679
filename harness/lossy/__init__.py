"""The lossy disk: a FUSE file system that loses, on command, what was not synced.

A power loss keeps what a program fsynced and loses the rest: bytes written since a file's last
fsync / fdatasync, and directory entries created, renamed or removed since the directory's last
fsync. Kafka relies on the operating system's page cache for durability by default, and on fsync
only where it calls it (flush.messages, checkpoints, KRaft's metadata log), so a power loss is a
fault of the file system, not of the process. This package makes one:

- `harness.lossy.undo`: the books. Every operation goes through to a real backing directory at
  once; the books keep what is needed to take the unsynced part back: per file its synced size and
  the synced bytes it has overwritten since (page by page), and a journal of directory changes with
  what they removed or replaced (moved aside into a stash directory). `drop` undoes all of it and
  says, per file, how many bytes were unsynced and how many it dropped.
- `harness.lossy.fs`: the FUSE operations (mfusepy over libfuse 3) that keep those books, and the
  disk faults served from the same place (a full disk, a failing fsync, a slow fsync).
- `harness.lossy.daemon`: the process serving one mount, its control socket (`drop`, `stats`,
  `fault`, `heal`) and the command line that talks to it.
- `harness.lossy.mounts`: a mount per node of a cluster, found again by run id and removed with it.

Why write-through with an undo record rather than LazyFS's cache of unsynced writes: Kafka appends.
An append overwrites no synced byte, so its undo costs nothing but a page number in the books, and
reads, `sendfile` and `mmap` all see the real file in the backing directory without the layer
merging a cache into them; only overwrites of synced bytes (index pages, a log cut back by
recovery) save a copy, and those are few and small. A cache holding every unsynced write would hold
all of a broker's data that Kafka never fsyncs (by default: everything), in the daemon's memory.
"""
