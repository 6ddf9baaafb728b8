//! Durable storage: a write-ahead log with group commit, plus periodic snapshots.
//!
//! # Data directory
//!
//! * `LOCK` — held with an exclusive OS advisory lock ([`File::try_lock`]) for as long as the
//!   store is open (by the writer thread, so it is released only after the last write).
//!   It contains the pid of the holder, for humans.
//! * `wal-<seq>.log` — the write-ahead log (`<seq>` is a zero-padded 20-digit number).
//! * `snapshot-<seq>.snap` — a snapshot covering everything in the logs with a smaller `<seq>`;
//!   `wal-<seq>.log` continues where it ends.
//! * `snapshot-<seq>.tmp` — a snapshot being written; ignored and removed on open.
//!
//! # File format
//!
//! Both file kinds start with an 8-byte magic (`KRLWAL01`, `KRLSNP01`) followed by frames:
//! `len: u32 LE`, `crc: u32 LE` (CRC-32 of the 4 length bytes followed by the payload), then
//! `len` bytes of payload, a JSON array.
//!
//! * A log frame is one group-commit batch; its payload is an array of records
//!   `{"rev": <u64>, "key": <string>, "obj": <object>}` (a put; `obj` is the stored object with
//!   its `resourceVersion`) or `{"rev": <u64>, "key": <string>}` (a delete). Event kinds and
//!   previous states are reconstructed by replaying. A batch larger than 64 MiB is split into
//!   several frames.
//! * A snapshot is a meta frame (`{"format":1,"base_revision":..,"revision":..,"objects":..,
//!   "events":..}`), then frames of `[key, object]` pairs holding every object as of
//!   `base_revision` (the oldest resumable revision), then frames of log records holding the
//!   retained watch history (`base_revision`, `revision`]. Replaying those records over the
//!   base state rebuilds both the current objects and the history with previous states, so a
//!   watch can resume across a restart from any revision the history retained.
//!
//! # Recovery
//!
//! On open: temporary snapshots are deleted; the newest snapshot (if any) is loaded — it must
//! be intact, since it was fsynced before it was renamed into place; then every log with a
//! sequence number at least the snapshot's is replayed in order. Only the newest log may end
//! in a damaged frame: a truncated frame, a CRC mismatch or garbage at the end is a torn write
//! from a crash and is truncated away (those writes were never acknowledged nor visible).
//! A damaged frame followed by an intact one, damage in an older log, a CRC-valid frame that
//! does not parse, or revisions that do not increase are corruption and fail the open with
//! [`StorageError::Recover`]. Files made obsolete by the snapshot are then deleted.
//!
//! # Writes
//!
//! One writer thread owns the log. `update` queues the request; the writer drains every
//! pending request (up to [`DurableOptions::max_batch`]), runs the update functions in order
//! (each sees the results of the earlier ones in the batch), appends the batch, calls
//! `sync_data` once, and only then publishes the batch to readers and watchers and answers
//! the callers. If appending or syncing fails, the batch fails with a 500 and the store turns
//! read-only (every later write fails with 503) rather than risk reusing revisions or
//! acknowledging writes after an fsync error; restarting recovers what reached the disk.
//!
//! # Compaction
//!
//! When the active log reaches [`DurableOptions::compact_threshold`] bytes, the writer starts
//! `wal-<seq+1>.log` (created, synced, directory synced) and hands a copy of the state (O(1)
//! for the objects) to a background thread, which writes `snapshot-<seq+1>.tmp`, syncs it,
//! renames it to `snapshot-<seq+1>.snap`, syncs the directory, and only then deletes the
//! older logs and snapshots. A crash at any point leaves either the old snapshot with all the
//! logs after it, or the new snapshot (with possibly some obsolete files that the next open
//! deletes). Writes continue while the snapshot is written.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufWriter, Seek, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use super::core::{self, Core, State};
use super::{
    Committed, DEFAULT_HISTORY, Event, EventType, Object, Snapshot, Storage, StorageError,
    UpdateFn, WatchFeed,
};
use crate::error::ApiError;

/// Log size (bytes) after which a snapshot is written, unless configured otherwise.
const DEFAULT_COMPACT_THRESHOLD: u64 = 64 << 20;

/// Most writes committed with one fsync, unless configured otherwise.
const DEFAULT_MAX_BATCH: usize = 1024;

const LOG_MAGIC: &[u8; 8] = b"KRLWAL01";
const SNAPSHOT_MAGIC: &[u8; 8] = b"KRLSNP01";
const SNAPSHOT_FORMAT: u32 = 1;
const FRAME_HEADER: usize = 8;
const LOCK_FILE: &str = "LOCK";
/// A log frame is closed once its payload reaches this size (a batch may span frames).
const LOG_FRAME_TARGET: usize = 64 << 20;
/// A snapshot frame is closed once its payload reaches this size.
const SNAPSHOT_FRAME_TARGET: usize = 1 << 20;

/// Settings of a [`DurableStorage`].
#[derive(Debug, Clone)]
pub struct DurableOptions {
    /// How many events are retained (in memory and in snapshots) for watch resumption.
    /// Default: [`DEFAULT_HISTORY`].
    pub history: usize,
    /// Size in bytes of the active log after which a snapshot is written and a new log begun.
    /// Default: 64 MiB.
    pub compact_threshold: u64,
    /// The most writes committed together with one fsync (at least 1 is used). Default: 1024.
    pub max_batch: usize,
}

impl Default for DurableOptions {
    fn default() -> Self {
        Self {
            history: DEFAULT_HISTORY,
            compact_threshold: DEFAULT_COMPACT_THRESHOLD,
            max_batch: DEFAULT_MAX_BATCH,
        }
    }
}

/// Counters of the writer, for tests and metrics.
#[derive(Debug, Default)]
struct Stats {
    /// Log fsyncs (one per committed batch).
    syncs: AtomicU64,
    /// Snapshots completed.
    snapshots: AtomicU64,
}

/// One queued write.
struct Request {
    key: String,
    decide: UpdateFn,
    reply: oneshot::Sender<Result<Committed, ApiError>>,
}

/// A [`Storage`] persisted in a data directory (see the module documentation for the format
/// and the guarantees).
///
/// Dropping it stops the writer thread after the queued writes are committed, waits for a
/// running snapshot to finish and releases the directory lock; the drop blocks until then
/// (use [`DurableStorage::close`] from async code).
#[derive(Debug)]
pub struct DurableStorage {
    core: Arc<Core>,
    requests: std::sync::RwLock<Option<mpsc::Sender<Request>>>,
    writer: std::sync::Mutex<Option<JoinHandle<()>>>,
    #[cfg(test)]
    stats: Arc<Stats>,
    dir: PathBuf,
}

impl DurableStorage {
    /// Opens (creating if needed) the store in `dir`: locks it, recovers it and starts the
    /// writer thread.
    ///
    /// This does blocking file I/O proportional to the data size (call it from
    /// `spawn_blocking` if a runtime must stay responsive). It needs no Tokio runtime.
    /// Fails with [`StorageError::Locked`] when another store (in this or another process)
    /// has the directory open, [`StorageError::Recover`] when the files are corrupt and
    /// [`StorageError::Open`] on I/O errors.
    pub fn open(dir: &Path, options: DurableOptions) -> Result<Self, StorageError> {
        let io_err = |source: io::Error| StorageError::Open {
            path: dir.display().to_string(),
            source,
        };
        // Objects (Secrets among them) live here: owner-only.
        crate::kubeconfig::create_private_dir(dir, true).map_err(io_err)?;
        let lock = lock_dir(dir)?;
        let recovered = recover(dir, options.history)?;
        let revision = recovered.state.revision;
        let objects = recovered.state.objects.len();
        let history = recovered.state.history.len();
        let core = Arc::new(Core::new(recovered.state));
        let stats = Arc::new(Stats::default());
        let (requests, queue) = mpsc::channel();
        let writer = Writer {
            core: core.clone(),
            dir: dir.to_path_buf(),
            max_batch: options.max_batch.max(1),
            compact_threshold: options.compact_threshold,
            next_compaction_at: options.compact_threshold,
            log: recovered.log,
            log_seq: recovered.log_seq,
            log_len: recovered.log_len,
            revision,
            failed: None,
            compaction: None,
            stats: stats.clone(),
            buf: Vec::new(),
            lock: Arc::new(lock),
        };
        let writer = std::thread::Builder::new()
            .name("korral-storage-writer".to_string())
            .spawn(move || writer.run(queue))
            .map_err(io_err)?;
        tracing::info!(
            dir = %dir.display(),
            revision,
            objects,
            history,
            log = recovered.log_seq,
            "opened durable storage"
        );
        Ok(Self {
            core,
            requests: std::sync::RwLock::new(Some(requests)),
            writer: std::sync::Mutex::new(Some(writer)),
            #[cfg(test)]
            stats,
            dir: dir.to_path_buf(),
        })
    }

    /// How many times the writer has fsynced the log (once per committed batch).
    #[cfg(test)]
    pub fn log_syncs(&self) -> u64 {
        self.stats.syncs.load(Ordering::Relaxed)
    }

    /// How many snapshots (compactions) have completed since open.
    #[cfg(test)]
    pub fn snapshots_written(&self) -> u64 {
        self.stats.snapshots.load(Ordering::Relaxed)
    }

    /// Stops accepting writes and returns the writer thread to join, if still running.
    fn stop_writer(&self) -> Option<JoinHandle<()>> {
        // Closing the queue ends the writer loop once the queued requests are done.
        drop(
            self.requests
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        if writer.thread().id() == std::thread::current().id() {
            // Dropped by an update function on the writer thread itself: it stops on its own
            // once the queue is drained, and cannot join itself.
            return None;
        }
        Some(writer)
    }

    fn join_writer(dir: &Path, writer: JoinHandle<()>) {
        if writer.join().is_err() {
            tracing::error!(dir = %dir.display(), "storage writer thread panicked");
        }
    }
}

impl Drop for DurableStorage {
    fn drop(&mut self) {
        if let Some(writer) = self.stop_writer() {
            Self::join_writer(&self.dir, writer);
        }
    }
}

impl Storage for DurableStorage {
    fn revision(&self) -> u64 {
        self.core.revision()
    }

    #[cfg(test)]
    fn oldest_resumable(&self) -> u64 {
        self.core.oldest_resumable()
    }

    fn get(&self, key: &str) -> Option<Object> {
        self.core.get(key)
    }

    fn snapshot(&self) -> Snapshot {
        self.core.snapshot()
    }

    fn any_under(&self, prefix: &str) -> bool {
        self.core.any_under(prefix)
    }

    /// Queues the write at once (so writes are applied in call order); dropping the returned
    /// future does not cancel it.
    fn close(&self) -> BoxFuture<'static, ()> {
        let writer = self.stop_writer();
        let dir = self.dir.clone();
        async move {
            if let Some(writer) = writer
                && tokio::task::spawn_blocking(move || Self::join_writer(&dir, writer))
                    .await
                    .is_err()
            {
                tracing::error!("closing durable storage panicked");
            }
        }
        .boxed()
    }

    fn update(
        &self,
        key: String,
        decide: UpdateFn,
    ) -> BoxFuture<'static, Result<Committed, ApiError>> {
        let (reply, answer) = oneshot::channel();
        let queued = match &*self.requests.read().unwrap_or_else(|e| e.into_inner()) {
            Some(requests) => requests.send(Request { key, decide, reply }).is_ok(),
            None => false,
        };
        if !queued {
            return futures::future::ready(Err(ApiError::unavailable("storage is shut down")))
                .boxed();
        }
        async move {
            answer.await.unwrap_or_else(|_| {
                Err(ApiError::internal(
                    "the storage writer stopped before answering",
                ))
            })
        }
        .boxed()
    }

    fn watch(&self, after: u64) -> Result<WatchFeed, ApiError> {
        self.core.watch(after)
    }
}

/// Creates the lock file and takes the exclusive advisory lock on it.
fn lock_dir(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join(LOCK_FILE);
    let io_err = |source: io::Error| StorageError::Open {
        path: path.display().to_string(),
        source,
    };
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(StorageError::Locked {
                path: dir.display().to_string(),
                lock: path.display().to_string(),
            });
        }
        Err(TryLockError::Error(source)) => return Err(io_err(source)),
    }
    // The pid is informational only.
    let pid = format!("{}\n", std::process::id());
    if let Err(error) = lock
        .set_len(0)
        .and_then(|()| (&lock).write_all(pid.as_bytes()))
    {
        tracing::warn!(%error, lock = %path.display(), "could not write pid into lock file");
    }
    Ok(lock)
}

// ---------------------------------------------------------------------------------------------
// Records and frames
// ---------------------------------------------------------------------------------------------

/// A log record as written (borrowing the event).
#[derive(Serialize)]
struct RecordRef<'a> {
    rev: u64,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    obj: Option<&'a Value>,
}

impl<'a> RecordRef<'a> {
    fn of(event: &'a Event) -> Self {
        Self {
            rev: event.revision,
            key: &event.key,
            obj: match event.kind {
                EventType::Deleted => None,
                EventType::Added | EventType::Modified => Some(&event.object),
            },
        }
    }
}

/// A log record as read.
#[derive(Deserialize)]
struct Record {
    rev: u64,
    key: String,
    #[serde(default)]
    obj: Option<Value>,
}

/// The first frame of a snapshot.
#[derive(Serialize, Deserialize)]
struct SnapshotMeta {
    format: u32,
    base_revision: u64,
    revision: u64,
    objects: u64,
    events: u64,
}

fn frame_crc(len: [u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(payload);
    hasher.finalize()
}

/// Builds frames whose payloads are JSON arrays, closing a frame once it reaches `target`.
struct ArrayFrames {
    buf: Vec<u8>,
    /// Offset in `buf` of the header of the frame being filled.
    open: Option<usize>,
    target: usize,
}

impl ArrayFrames {
    fn new(buf: Vec<u8>, target: usize) -> Self {
        Self {
            buf,
            open: None,
            target,
        }
    }

    fn push<T: Serialize>(&mut self, item: &T) -> io::Result<()> {
        let start = match self.open {
            Some(start) => {
                self.buf.push(b',');
                start
            }
            None => {
                let start = self.buf.len();
                self.buf.extend_from_slice(&[0; FRAME_HEADER]);
                self.buf.push(b'[');
                self.open = Some(start);
                start
            }
        };
        serde_json::to_writer(&mut self.buf, item).map_err(io::Error::other)?;
        if self.buf.len() - start - FRAME_HEADER >= self.target {
            self.close()?;
        }
        Ok(())
    }

    /// Closes the open frame, if any.
    fn close(&mut self) -> io::Result<()> {
        let Some(start) = self.open.take() else {
            return Ok(());
        };
        self.buf.push(b']');
        let len = u32::try_from(self.buf.len() - start - FRAME_HEADER)
            .map_err(|_| io::Error::other("storage frame larger than 4 GiB"))?
            .to_le_bytes();
        let crc = frame_crc(len, &self.buf[start + FRAME_HEADER..]);
        self.buf[start..start + 4].copy_from_slice(&len);
        self.buf[start + 4..start + FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
        Ok(())
    }

    /// Writes the closed frames to `out` (call only when no frame is open).
    fn drain_into(&mut self, out: &mut impl io::Write) -> io::Result<()> {
        if self.open.is_none() && !self.buf.is_empty() {
            out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// Appends one frame with a JSON payload.
fn single_frame<T: Serialize>(out: &mut Vec<u8>, value: &T) -> io::Result<()> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    let len = u32::try_from(out.len() - start - FRAME_HEADER)
        .map_err(|_| io::Error::other("storage frame larger than 4 GiB"))?
        .to_le_bytes();
    let crc = frame_crc(len, &out[start + FRAME_HEADER..]);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// What is at an offset of a file.
enum Frame<'a> {
    /// An intact frame and the offset after it.
    Intact { payload: &'a [u8], next: usize },
    /// The end of the file.
    End,
    /// A damaged frame: why, and where it would end if its length field is right.
    Damaged {
        why: &'static str,
        declared_end: Option<usize>,
    },
}

fn read_frame(buf: &[u8], pos: usize) -> Frame<'_> {
    let Some(rest) = buf.get(pos..) else {
        return Frame::Damaged {
            why: "offset past the end",
            declared_end: None,
        };
    };
    if rest.is_empty() {
        return Frame::End;
    }
    let (Some(len), Some(crc)) = (rest.get(0..4), rest.get(4..FRAME_HEADER)) else {
        return Frame::Damaged {
            why: "truncated frame header",
            declared_end: None,
        };
    };
    let len: [u8; 4] = [len[0], len[1], len[2], len[3]];
    let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let size = u32::from_le_bytes(len) as usize;
    let end = FRAME_HEADER.saturating_add(size);
    let Some(payload) = rest.get(FRAME_HEADER..end) else {
        return Frame::Damaged {
            why: "truncated frame",
            declared_end: None,
        };
    };
    if frame_crc(len, payload) != crc {
        return Frame::Damaged {
            why: "checksum mismatch",
            declared_end: Some(pos + end),
        };
    }
    Frame::Intact {
        payload,
        next: pos + end,
    }
}

// ---------------------------------------------------------------------------------------------
// Directory layout
// ---------------------------------------------------------------------------------------------

fn log_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("wal-{seq:020}.log"))
}

fn snapshot_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("snapshot-{seq:020}.snap"))
}

fn snapshot_temp_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("snapshot-{seq:020}.tmp"))
}

fn parse_seq(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The storage files found in a directory.
#[derive(Default)]
struct Listing {
    logs: Vec<u64>,
    snapshots: Vec<u64>,
    temps: Vec<PathBuf>,
}

fn list(dir: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(seq) = parse_seq(name, "wal-", ".log") {
            listing.logs.push(seq);
        } else if let Some(seq) = parse_seq(name, "snapshot-", ".snap") {
            listing.snapshots.push(seq);
        } else if parse_seq(name, "snapshot-", ".tmp").is_some() {
            listing.temps.push(entry.path());
        }
    }
    listing.logs.sort_unstable();
    listing.snapshots.sort_unstable();
    Ok(listing)
}

/// Makes renames, creations and deletions in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Creates a new, empty log file (header only), durably.
fn create_log(dir: &Path, seq: u64) -> io::Result<File> {
    let path = log_path(dir, seq);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.write_all(LOG_MAGIC)?;
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(file)
}

/// Deletes logs and snapshots older than `seq` (made obsolete by snapshot `seq`).
fn remove_obsolete(dir: &Path, seq: u64) -> io::Result<()> {
    let listing = list(dir)?;
    let mut removed = false;
    for old in listing.logs.iter().filter(|&&s| s < seq) {
        fs::remove_file(log_path(dir, *old))?;
        removed = true;
    }
    for old in listing.snapshots.iter().filter(|&&s| s < seq) {
        fs::remove_file(snapshot_path(dir, *old))?;
        removed = true;
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Recovery
// ---------------------------------------------------------------------------------------------

/// The recovered state and the log to append to.
struct Recovered {
    state: State,
    log: File,
    log_seq: u64,
    log_len: u64,
}

fn recover_err(path: &Path, message: impl Into<String>) -> StorageError {
    StorageError::Recover {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn open_err(path: &Path) -> impl Fn(io::Error) -> StorageError + '_ {
    move |source| StorageError::Open {
        path: path.display().to_string(),
        source,
    }
}

/// Applies one record to the state, rebuilding its event.
fn replay(state: &mut State, record: Record) -> Result<(), String> {
    if record.rev <= state.revision {
        return Err(format!(
            "revision {} does not follow revision {}",
            record.rev, state.revision
        ));
    }
    let previous = state.objects.get(&record.key).cloned();
    let event = match record.obj {
        Some(object) => Event {
            revision: record.rev,
            kind: if previous.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            },
            key: record.key,
            object: Arc::new(object),
            previous,
        },
        None => {
            let Some(previous) = previous else {
                return Err(format!(
                    "revision {} deletes {:?}, which does not exist",
                    record.rev, record.key
                ));
            };
            Event {
                revision: record.rev,
                kind: EventType::Deleted,
                key: record.key,
                object: core::deleted_object(&previous, record.rev),
                previous: Some(previous),
            }
        }
    };
    state.apply(Arc::new(event));
    Ok(())
}

fn recover(dir: &Path, history: usize) -> Result<Recovered, StorageError> {
    let listing = list(dir).map_err(open_err(dir))?;
    for temp in &listing.temps {
        tracing::info!(file = %temp.display(), "removing unfinished snapshot");
        fs::remove_file(temp).map_err(open_err(temp))?;
    }
    let floor = listing.snapshots.last().copied();
    let mut state = match floor {
        Some(seq) => load_snapshot(&snapshot_path(dir, seq), history)?,
        None => State::empty(history),
    };
    let floor = floor.unwrap_or(0);
    let logs: Vec<u64> = listing
        .logs
        .iter()
        .copied()
        .filter(|&s| s >= floor)
        .collect();
    let mut active = None;
    for (i, &seq) in logs.iter().enumerate() {
        let newest = i + 1 == logs.len();
        let valid = replay_log(&log_path(dir, seq), &mut state, newest)?;
        if newest {
            active = Some((seq, valid));
        }
    }
    remove_obsolete(dir, floor).map_err(open_err(dir))?;
    let (log, log_seq, log_len) = match active {
        Some((seq, valid)) => {
            let path = log_path(dir, seq);
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(open_err(&path))?;
            let on_disk = file.metadata().map_err(open_err(&path))?.len();
            let valid = match valid {
                Some(len) => len,
                None => {
                    // A log whose header never made it to disk: start it again.
                    file.set_len(0).map_err(open_err(&path))?;
                    file.write_all(LOG_MAGIC).map_err(open_err(&path))?;
                    LOG_MAGIC.len() as u64
                }
            };
            if on_disk != valid {
                file.set_len(valid).map_err(open_err(&path))?;
                file.sync_all().map_err(open_err(&path))?;
            }
            file.seek(SeekFrom::Start(valid)).map_err(open_err(&path))?;
            (file, seq, valid)
        }
        None => {
            let seq = floor.max(1);
            let file = create_log(dir, seq).map_err(open_err(dir))?;
            (file, seq, LOG_MAGIC.len() as u64)
        }
    };
    Ok(Recovered {
        state,
        log,
        log_seq,
        log_len,
    })
}

/// Replays one log. Returns the length of its valid prefix (`None`: its header is torn).
fn replay_log(path: &Path, state: &mut State, newest: bool) -> Result<Option<u64>, StorageError> {
    let buf = fs::read(path).map_err(open_err(path))?;
    match buf.get(..LOG_MAGIC.len()) {
        Some(magic) if magic == LOG_MAGIC => {}
        Some(_) => return Err(recover_err(path, "not a korral log file (bad magic)")),
        None if newest => {
            tracing::warn!(file = %path.display(), "log header is torn; starting the log again");
            return Ok(None);
        }
        None => return Err(recover_err(path, "log file is shorter than its header")),
    }
    let mut pos = LOG_MAGIC.len();
    let mut records = 0usize;
    loop {
        match read_frame(&buf, pos) {
            Frame::End => break,
            Frame::Intact { payload, next } => {
                let batch: Vec<Record> = serde_json::from_slice(payload).map_err(|error| {
                    recover_err(path, format!("undecodable frame at offset {pos}: {error}"))
                })?;
                records += batch.len();
                for record in batch {
                    replay(state, record).map_err(|message| {
                        recover_err(path, format!("frame at offset {pos}: {message}"))
                    })?;
                }
                pos = next;
            }
            Frame::Damaged { why, declared_end } => {
                if !newest {
                    return Err(recover_err(
                        path,
                        format!("{why} at offset {pos} in a log that is not the newest"),
                    ));
                }
                if let Some(end) = declared_end
                    && matches!(read_frame(&buf, end), Frame::Intact { .. })
                {
                    return Err(recover_err(
                        path,
                        format!("{why} at offset {pos}, followed by intact records"),
                    ));
                }
                tracing::warn!(
                    file = %path.display(),
                    offset = pos,
                    dropped_bytes = buf.len() - pos,
                    "{why}: truncating the torn tail of the log"
                );
                break;
            }
        }
    }
    tracing::debug!(file = %path.display(), records, revision = state.revision, "replayed log");
    Ok(Some(pos as u64))
}

/// Expects an intact frame at `pos` of a snapshot and decodes it.
fn snapshot_frame<T: serde::de::DeserializeOwned>(
    path: &Path,
    buf: &[u8],
    pos: &mut usize,
) -> Result<T, StorageError> {
    match read_frame(buf, *pos) {
        Frame::Intact { payload, next } => {
            let value = serde_json::from_slice(payload).map_err(|error| {
                recover_err(path, format!("undecodable frame at offset {pos}: {error}"))
            })?;
            *pos = next;
            Ok(value)
        }
        Frame::End => Err(recover_err(path, "snapshot ends early")),
        Frame::Damaged { why, .. } => Err(recover_err(path, format!("{why} at offset {pos}"))),
    }
}

fn load_snapshot(path: &Path, history: usize) -> Result<State, StorageError> {
    let buf = fs::read(path).map_err(open_err(path))?;
    if buf.get(..SNAPSHOT_MAGIC.len()) != Some(SNAPSHOT_MAGIC.as_slice()) {
        return Err(recover_err(path, "not a korral snapshot (bad magic)"));
    }
    let mut pos = SNAPSHOT_MAGIC.len();
    let meta: SnapshotMeta = snapshot_frame(path, &buf, &mut pos)?;
    if meta.format != SNAPSHOT_FORMAT {
        return Err(recover_err(
            path,
            format!("unknown snapshot format {}", meta.format),
        ));
    }
    let mut objects = imbl::OrdMap::new();
    let mut count = 0u64;
    while count < meta.objects {
        let chunk: Vec<(String, Value)> = snapshot_frame(path, &buf, &mut pos)?;
        count += chunk.len() as u64;
        for (key, object) in chunk {
            objects.insert(key, Arc::new(object));
        }
    }
    let mut state = State::at(objects, meta.base_revision, history);
    let mut events = 0u64;
    while events < meta.events {
        let chunk: Vec<Record> = snapshot_frame(path, &buf, &mut pos)?;
        events += chunk.len() as u64;
        for record in chunk {
            replay(&mut state, record).map_err(|message| recover_err(path, message))?;
        }
    }
    if count != meta.objects || events != meta.events || pos != buf.len() {
        return Err(recover_err(path, "snapshot does not match its header"));
    }
    if state.revision != meta.revision {
        return Err(recover_err(
            path,
            format!(
                "snapshot replays to revision {}, expected {}",
                state.revision, meta.revision
            ),
        ));
    }
    tracing::debug!(
        file = %path.display(),
        objects = count,
        events,
        revision = state.revision,
        "loaded snapshot"
    );
    Ok(state)
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

/// Writes `snapshot-<seq>.snap` holding `state` (which must be the state at the end of the
/// logs before `seq`), crash-safely.
fn write_snapshot(dir: &Path, seq: u64, state: &State) -> io::Result<PathBuf> {
    let events = state.history.events();
    // Roll the objects back to the oldest resumable revision; the events are replayed on load.
    let mut base = state.objects.clone();
    for event in events.iter().rev() {
        match &event.previous {
            Some(previous) => {
                base.insert(event.key.clone(), previous.clone());
            }
            None => {
                base.remove(&event.key);
            }
        }
    }
    let meta = SnapshotMeta {
        format: SNAPSHOT_FORMAT,
        base_revision: state.history.oldest_resumable(),
        revision: state.revision,
        objects: base.len() as u64,
        events: events.len() as u64,
    };
    let temp = snapshot_temp_path(dir, seq);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&temp)?);
    out.write_all(SNAPSHOT_MAGIC)?;
    let mut frame = Vec::new();
    single_frame(&mut frame, &meta)?;
    out.write_all(&frame)?;
    let mut frames = ArrayFrames::new(frame, SNAPSHOT_FRAME_TARGET);
    frames.buf.clear();
    for (key, object) in base.iter() {
        frames.push(&(key, &**object))?;
        frames.drain_into(&mut out)?;
    }
    frames.close()?;
    for event in &events {
        frames.push(&RecordRef::of(event))?;
        frames.drain_into(&mut out)?;
    }
    frames.close()?;
    frames.drain_into(&mut out)?;
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    drop(file);
    let path = snapshot_path(dir, seq);
    fs::rename(&temp, &path)?;
    sync_dir(dir)?;
    Ok(path)
}

// ---------------------------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------------------------

/// The single owner of the log; runs on its own thread.
struct Writer {
    core: Arc<Core>,
    dir: PathBuf,
    max_batch: usize,
    compact_threshold: u64,
    /// Active log length at which the next compaction is attempted.
    next_compaction_at: u64,
    log: File,
    log_seq: u64,
    log_len: u64,
    /// The revision of the last committed write.
    revision: u64,
    /// Set after a failed append or sync: the store no longer accepts writes.
    failed: Option<String>,
    compaction: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
    /// Reused encoding buffer.
    buf: Vec<u8>,
    /// The directory lock, held until the writer and any snapshot thread are done.
    lock: Arc<File>,
}

impl Writer {
    fn run(mut self, queue: mpsc::Receiver<Request>) {
        let mut batch = Vec::with_capacity(self.max_batch.min(4096));
        while let Ok(first) = queue.recv() {
            batch.push(first);
            while batch.len() < self.max_batch {
                match queue.try_recv() {
                    Ok(request) => batch.push(request),
                    Err(_) => break,
                }
            }
            self.commit(&mut batch);
            self.maybe_compact();
        }
        if let Some(compaction) = self.compaction.take()
            && compaction.join().is_err()
        {
            tracing::error!("snapshot thread panicked");
        }
        tracing::debug!(dir = %self.dir.display(), revision = self.revision, "storage writer stopped");
        drop(self.lock);
    }

    /// Decides, persists, publishes and answers one batch.
    fn commit(&mut self, batch: &mut Vec<Request>) {
        if let Some(reason) = &self.failed {
            let message = format!("storage is read-only after a write failure: {reason}");
            for request in batch.drain(..) {
                let _ = request
                    .reply
                    .send(Err(ApiError::unavailable(message.clone())));
            }
            return;
        }
        // Writes of this batch not yet visible in `core`; `None` marks a delete.
        let mut overlay: HashMap<String, Option<Object>> = HashMap::new();
        let mut events = Vec::new();
        let mut answers = Vec::with_capacity(batch.len());
        let mut revision = self.revision;
        for Request { key, decide, reply } in batch.drain(..) {
            let current = match overlay.get(&key) {
                Some(pending) => pending.clone(),
                None => self.core.get(&key),
            };
            let result = core::decide(key, current.clone(), revision + 1, decide).map(|event| {
                if let Some(event) = &event {
                    revision = event.revision;
                    let now = match event.kind {
                        EventType::Deleted => None,
                        EventType::Added | EventType::Modified => Some(event.object.clone()),
                    };
                    overlay.insert(event.key.clone(), now);
                    events.push(event.clone());
                }
                core::committed(event, current)
            });
            answers.push((reply, result));
        }
        if !events.is_empty() {
            if let Err(error) = self.append(&events) {
                tracing::error!(
                    dir = %self.dir.display(),
                    %error,
                    "appending to the storage log failed; storage is now read-only"
                );
                let message = format!("writing the storage log failed: {error}");
                self.failed = Some(error.to_string());
                for (reply, _) in answers {
                    let _ = reply.send(Err(ApiError::internal(message.clone())));
                }
                return;
            }
            self.revision = revision;
            self.core.publish(&events);
        }
        for (reply, result) in answers {
            // The caller may have stopped waiting; the write stands regardless.
            let _ = reply.send(result);
        }
    }

    /// Appends the batch to the log and syncs it.
    fn append(&mut self, events: &[Arc<Event>]) -> io::Result<()> {
        let mut frames = ArrayFrames::new(std::mem::take(&mut self.buf), LOG_FRAME_TARGET);
        frames.buf.clear();
        for event in events {
            frames.push(&RecordRef::of(event))?;
        }
        frames.close()?;
        let buf = frames.buf;
        self.log.write_all(&buf)?;
        self.log.sync_data()?;
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        self.log_len += buf.len() as u64;
        // Keep a moderately sized buffer for the next batch.
        if buf.capacity() <= 4 << 20 {
            self.buf = buf;
        }
        Ok(())
    }

    /// Starts a new log and a background snapshot once the log is large enough.
    fn maybe_compact(&mut self) {
        if self.failed.is_some() || self.log_len < self.next_compaction_at {
            return;
        }
        if let Some(running) = &self.compaction {
            if !running.is_finished() {
                return;
            }
            if let Some(done) = self.compaction.take()
                && done.join().is_err()
            {
                tracing::error!("snapshot thread panicked");
            }
        }
        match self.rotate() {
            Ok(()) => self.next_compaction_at = self.compact_threshold,
            Err(error) => {
                tracing::warn!(dir = %self.dir.display(), %error, "could not start compaction");
                self.next_compaction_at =
                    self.log_len.saturating_add(self.compact_threshold.max(1));
            }
        }
    }

    fn rotate(&mut self) -> io::Result<()> {
        let seq = self.log_seq + 1;
        let log = create_log(&self.dir, seq)?;
        self.log = log;
        self.log_seq = seq;
        self.log_len = LOG_MAGIC.len() as u64;
        // Everything in the older logs is published, and nothing else is.
        let state = self.core.capture();
        let dir = self.dir.clone();
        let stats = self.stats.clone();
        let lock = self.lock.clone();
        let handle = std::thread::Builder::new()
            .name("korral-storage-snapshot".to_string())
            .spawn(move || {
                let started = std::time::Instant::now();
                match write_snapshot(&dir, seq, &state) {
                    Ok(path) => {
                        stats.snapshots.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(
                            file = %path.display(),
                            revision = state.revision,
                            objects = state.objects.len(),
                            elapsed_ms = started.elapsed().as_millis() as u64,
                            "wrote storage snapshot"
                        );
                        if let Err(error) = remove_obsolete(&dir, seq) {
                            tracing::warn!(%error, "could not remove obsolete storage files");
                        }
                    }
                    Err(error) => {
                        tracing::error!(dir = %dir.display(), %error, "writing storage snapshot failed");
                        let _ = fs::remove_file(snapshot_temp_path(&dir, seq));
                    }
                }
                drop(lock);
            })?;
        self.compaction = Some(handle);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::super::core::conformance::{self, delete, put, rv};
    use super::*;

    fn options() -> DurableOptions {
        DurableOptions::default()
    }

    fn open(dir: &Path) -> DurableStorage {
        DurableStorage::open(dir, options()).expect("open")
    }

    fn tiny_compaction(history: usize) -> DurableOptions {
        DurableOptions {
            history,
            compact_threshold: 1,
            max_batch: DEFAULT_MAX_BATCH,
        }
    }

    fn files(dir: &Path, suffix: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(suffix))
            .collect();
        names.sort();
        names
    }

    fn only_log(dir: &Path) -> PathBuf {
        let logs = files(dir, ".log");
        assert_eq!(logs.len(), 1, "one log: {logs:?}");
        dir.join(&logs[0])
    }

    /// Every object of a store, for comparing stores.
    fn contents(store: &DurableStorage) -> Vec<(String, Value)> {
        store
            .snapshot()
            .objects
            .iter()
            .map(|(k, v)| (k.clone(), (**v).clone()))
            .collect()
    }

    /// (revision, kind, key, object, previous) of every event after `after`.
    fn history(
        store: &DurableStorage,
        after: u64,
    ) -> Vec<(u64, EventType, String, Value, Option<Value>)> {
        store
            .watch(after)
            .expect("watch")
            .backlog
            .iter()
            .map(|e| {
                (
                    e.revision,
                    e.kind,
                    e.key.clone(),
                    (*e.object).clone(),
                    e.previous.as_deref().cloned(),
                )
            })
            .collect()
    }

    /// A mix of creates, updates and deletes, one at a time (one batch each).
    async fn mixed_writes(store: &DurableStorage, n: usize) {
        for i in 0..n {
            let key = format!("/core/configmaps/ns/o{}", i % 7);
            if i % 5 == 4 && store.get(&key).is_some() {
                delete(store, &key).await;
            } else {
                put(
                    store,
                    &key,
                    json!({"metadata": {"name": key}, "data": {"i": i}}),
                )
                .await;
            }
        }
    }

    #[tokio::test]
    async fn put_get_delete_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::put_get_delete_unchanged(&open(dir.path())).await;
    }

    #[tokio::test]
    async fn revisions_are_monotonic_and_stamped() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::revisions_are_monotonic_and_stamped(&open(dir.path())).await;
    }

    #[tokio::test]
    async fn failed_update_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::failed_update_writes_nothing(&open(dir.path())).await;
    }

    #[tokio::test]
    async fn snapshot_is_consistent_and_ranged() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::snapshot_is_consistent_and_ranged(&open(dir.path())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_read_modify_write_is_atomic() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::concurrent_read_modify_write_is_atomic(Arc::new(open(dir.path()))).await;
    }

    #[tokio::test]
    async fn watch_backlog_and_live() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::watch_backlog_and_live(&open(dir.path())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn update_function_may_read_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::update_function_may_read_the_store(Arc::new(open(dir.path()))).await;
    }

    #[tokio::test]
    async fn last_handle_dropped_inside_an_update_function_does_not_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(open(dir.path()));
        let inner = store.clone();
        let pending = store.update(
            "/core/configmaps/ns/a".to_string(),
            Box::new(move |_| {
                drop(inner);
                Ok(super::super::Write::Put(json!({})))
            }),
        );
        drop(store);
        let result = tokio::time::timeout(Duration::from_secs(10), pending)
            .await
            .expect("no deadlock");
        assert!(result.expect("committed").event.is_some());
        // The writer released the lock on its way out.
        let mut reopened = None;
        for _ in 0..100 {
            match DurableStorage::open(dir.path(), options()) {
                Ok(store) => {
                    reopened = Some(store);
                    break;
                }
                Err(StorageError::Locked { .. }) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(other) => panic!("{other}"),
            }
        }
        let store = reopened.expect("lock released");
        assert!(store.get("/core/configmaps/ns/a").is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn watch_has_no_gap_under_concurrent_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::watch_has_no_gap_under_concurrent_writes(Arc::new(open(dir.path()))).await;
    }

    #[tokio::test]
    async fn expired_watch_is_410() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = DurableStorage::open(
            dir.path(),
            DurableOptions {
                history: 5,
                ..options()
            },
        )
        .expect("open");
        conformance::expired_watch_is_410(&store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_survive_reopen_and_revision_continues() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(open(dir.path()));
        let start = store.revision();
        let mut tasks = Vec::new();
        for client in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..25 {
                    let key = format!("/core/configmaps/c{client}/o{i}");
                    put(
                        &*store,
                        &key,
                        json!({"metadata": {"name": key}, "data": {"i": i}}),
                    )
                    .await;
                }
                delete(&*store, &format!("/core/configmaps/c{client}/o0")).await;
            }));
        }
        for task in tasks {
            task.await.expect("client");
        }
        let before = contents(&store);
        let revision = store.revision();
        let events = history(&store, start);
        assert_eq!(before.len(), 16 * 24);
        assert_eq!(revision, start + 16 * 26);
        let store = Arc::into_inner(store).expect("sole owner");
        store.close().await;

        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
        // The history (with previous states) survived too: a watch from the start replays it.
        assert_eq!(history(&store, start), events);
        let next = put(&store, "/core/configmaps/new/x", json!({})).await;
        assert_eq!(next.event.expect("event").revision, revision + 1);
        drop(store);
        let store = open(dir.path());
        assert_eq!(store.revision(), revision + 1);
        assert!(store.get("/core/configmaps/new/x").is_some());
    }

    #[tokio::test]
    async fn watch_from_old_revision_resumes_after_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        mixed_writes(&store, 10).await;
        let resume_from = store.revision();
        mixed_writes(&store, 10).await;
        let expected = history(&store, resume_from);
        assert_eq!(expected.len(), 10);
        drop(store);

        let store = open(dir.path());
        let mut feed = store.watch(resume_from).expect("resumable after restart");
        let replayed: Vec<u64> = feed.backlog.iter().map(|e| e.revision).collect();
        assert_eq!(
            replayed,
            (resume_from + 1..=resume_from + 10).collect::<Vec<_>>()
        );
        assert_eq!(history(&store, resume_from), expected);
        for event in &feed.backlog {
            assert_eq!(rv(&event.object), event.revision.to_string());
        }
        // And live events follow seamlessly.
        put(&store, "/core/configmaps/ns/live", json!({})).await;
        let live = tokio::time::timeout(Duration::from_secs(5), feed.live.recv())
            .await
            .expect("in time")
            .expect("event");
        assert_eq!(live.revision, resume_from + 11);
    }

    #[tokio::test]
    async fn garbage_tail_is_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for i in 0..10 {
            put(
                &store,
                &format!("/core/configmaps/ns/o{i}"),
                json!({"i": i}),
            )
            .await;
        }
        let revision = store.revision();
        drop(store);
        let log = only_log(dir.path());
        let clean_len = fs::metadata(&log).expect("meta").len();
        let mut file = OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("open log");
        file.write_all(&[0x13, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, b'{', b'"', b'r'])
            .expect("append garbage");
        drop(file);

        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert_eq!(store.snapshot().objects.len(), 10);
        assert_eq!(
            fs::metadata(&log).expect("meta").len(),
            clean_len,
            "tail truncated"
        );
        // The log is appendable again: a new write survives another restart.
        put(&store, "/core/configmaps/ns/after", json!({})).await;
        drop(store);
        let store = open(dir.path());
        assert_eq!(store.revision(), revision + 1);
        assert_eq!(store.snapshot().objects.len(), 11);
    }

    #[tokio::test]
    async fn zero_filled_tail_is_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        put(&store, "/core/configmaps/ns/a", json!({})).await;
        let revision = store.revision();
        drop(store);
        let log = only_log(dir.path());
        let len = fs::metadata(&log).expect("meta").len();
        OpenOptions::new()
            .write(true)
            .open(&log)
            .expect("open")
            .set_len(len + 4096)
            .expect("extend");
        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert!(store.get("/core/configmaps/ns/a").is_some());
    }

    #[tokio::test]
    async fn truncated_last_record_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for i in 0..10 {
            put(
                &store,
                &format!("/core/configmaps/ns/o{i}"),
                json!({"i": i}),
            )
            .await;
        }
        let revision = store.revision();
        drop(store);
        let log = only_log(dir.path());
        let len = fs::metadata(&log).expect("meta").len();
        OpenOptions::new()
            .write(true)
            .open(&log)
            .expect("open")
            .set_len(len - 5)
            .expect("truncate");

        let store = open(dir.path());
        assert_eq!(store.revision(), revision - 1);
        assert_eq!(store.snapshot().objects.len(), 9);
        for i in 0..9 {
            assert_eq!(
                store
                    .get(&format!("/core/configmaps/ns/o{i}"))
                    .expect("kept")["i"],
                i
            );
        }
        assert!(store.get("/core/configmaps/ns/o9").is_none());
    }

    #[tokio::test]
    async fn corruption_in_the_middle_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for i in 0..10 {
            put(
                &store,
                &format!("/core/configmaps/ns/o{i}"),
                json!({"i": i}),
            )
            .await;
        }
        drop(store);
        let log = only_log(dir.path());
        let mut bytes = fs::read(&log).expect("read");
        // Flip a byte inside the first frame's payload.
        let offset = LOG_MAGIC.len() + FRAME_HEADER + 3;
        bytes[offset] ^= 0x20;
        fs::write(&log, &bytes).expect("write");
        match DurableStorage::open(dir.path(), options()) {
            Err(StorageError::Recover { message, .. }) => {
                assert!(message.contains("followed by intact records"), "{message}");
            }
            other => panic!("expected a recovery error, got {other:?}"),
        }
        // Nothing was truncated by the failed open.
        assert_eq!(fs::read(&log).expect("read"), bytes);
    }

    #[tokio::test]
    async fn second_open_is_locked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        match DurableStorage::open(dir.path(), options()) {
            Err(StorageError::Locked { path, lock }) => {
                assert_eq!(path, dir.path().display().to_string());
                assert!(lock.ends_with(LOCK_FILE));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        put(&store, "/core/configmaps/ns/a", json!({})).await;
        drop(store);
        let store = open(dir.path());
        assert!(store.get("/core/configmaps/ns/a").is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn group_commit_batches_fsyncs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(open(dir.path()));
        let writes: Vec<_> = (0..200)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    put(&*store, &format!("/core/configmaps/ns/o{i}"), json!({})).await;
                })
            })
            .collect();
        for write in writes {
            write.await.expect("write");
        }
        let syncs = store.log_syncs();
        assert!(syncs >= 1);
        assert!(syncs < 100, "{syncs} fsyncs for 200 concurrent writes");
        assert_eq!(store.snapshot().objects.len(), 200);
    }

    #[tokio::test]
    async fn every_sequential_write_is_synced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for i in 0..5 {
            put(&store, &format!("/core/configmaps/ns/o{i}"), json!({})).await;
        }
        // Unchanged writes and failed updates need no fsync.
        store
            .update(
                "/core/configmaps/ns/o0".to_string(),
                Box::new(|_| Ok(super::super::Write::Unchanged)),
            )
            .await
            .expect("unchanged");
        assert_eq!(store.log_syncs(), 5);
    }

    #[tokio::test]
    async fn compaction_keeps_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = DurableStorage::open(dir.path(), tiny_compaction(1000)).expect("open");
        let start = store.revision();
        mixed_writes(&store, 100).await;
        let before = contents(&store);
        let events = history(&store, start);
        let revision = store.revision();
        assert!(store.log_syncs() >= 100);
        drop(store);
        let snapshots = files(dir.path(), ".snap");
        assert_eq!(snapshots.len(), 1, "{snapshots:?}");
        let logs = files(dir.path(), ".log");
        assert_eq!(logs.len(), 1, "obsolete logs removed: {logs:?}");
        assert!(files(dir.path(), ".tmp").is_empty());

        let store = DurableStorage::open(dir.path(), tiny_compaction(1000)).expect("reopen");
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
        assert_eq!(history(&store, start), events);
        mixed_writes(&store, 30).await;
        let before = contents(&store);
        let revision = store.revision();
        drop(store);

        // Reopen with the default threshold too.
        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
    }

    #[tokio::test]
    async fn compaction_with_short_history_expires_old_watches_after_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = DurableStorage::open(dir.path(), tiny_compaction(10)).expect("open");
        mixed_writes(&store, 50).await;
        let revision = store.revision();
        let events = history(&store, store.oldest_resumable());
        assert_eq!(events.len(), 10);
        drop(store);

        let store = DurableStorage::open(dir.path(), tiny_compaction(10)).expect("reopen");
        assert_eq!(store.revision(), revision);
        assert_eq!(store.oldest_resumable(), revision - 10);
        assert_eq!(history(&store, revision - 10), events);
        assert_eq!(
            store.watch(revision - 11).map(|_| ()).map_err(|e| e.code),
            Err(410)
        );
        drop(store);

        // A smaller history on reopen keeps only the newest events.
        let store = DurableStorage::open(
            dir.path(),
            DurableOptions {
                history: 3,
                ..options()
            },
        )
        .expect("reopen");
        assert_eq!(store.oldest_resumable(), revision - 3);
        assert_eq!(history(&store, revision - 3), events[7..].to_vec());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_during_compaction_survive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = DurableOptions {
            history: 50,
            compact_threshold: 4096,
            max_batch: 16,
        };
        let store = Arc::new(DurableStorage::open(dir.path(), opts.clone()).expect("open"));
        let mut tasks = Vec::new();
        for client in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..60 {
                    let key = format!("/core/configmaps/c{client}/o{}", i % 20);
                    put(
                        &*store,
                        &key,
                        json!({"data": {"pad": "x".repeat(100), "i": i}}),
                    )
                    .await;
                }
            }));
        }
        for task in tasks {
            task.await.expect("client");
        }
        assert!(store.snapshots_written() >= 1, "compaction ran");
        let before = contents(&store);
        let revision = store.revision();
        let events = history(&store, store.oldest_resumable());
        let store = Arc::into_inner(store).expect("sole owner");
        store.close().await;
        let store = DurableStorage::open(dir.path(), opts).expect("reopen");
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
        assert_eq!(history(&store, store.oldest_resumable()), events);
    }

    #[tokio::test]
    async fn crash_before_snapshot_rename_recovers_from_all_logs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        mixed_writes(&store, 20).await;
        drop(store);
        // As if a rotation had created the next log and the snapshot was still being written.
        let first = only_log(dir.path());
        let seq = parse_seq(
            first.file_name().and_then(|n| n.to_str()).expect("name"),
            "wal-",
            ".log",
        )
        .expect("seq");
        drop(create_log(dir.path(), seq + 1).expect("create next log"));
        fs::write(
            snapshot_temp_path(dir.path(), seq + 1),
            b"KRLSNP01 half written",
        )
        .expect("temp");

        let store = open(dir.path());
        assert!(
            files(dir.path(), ".tmp").is_empty(),
            "temp snapshot removed"
        );
        mixed_writes(&store, 20).await;
        let before = contents(&store);
        let revision = store.revision();
        drop(store);
        assert_eq!(files(dir.path(), ".log").len(), 2);
        // A torn tail in the older log is corruption, not a torn write.
        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
        drop(store);
        let mut file = OpenOptions::new().append(true).open(&first).expect("open");
        file.write_all(b"garbage").expect("append");
        drop(file);
        assert!(matches!(
            DurableStorage::open(dir.path(), options()),
            Err(StorageError::Recover { .. })
        ));
    }

    #[tokio::test]
    async fn snapshot_newer_than_logs_removes_obsolete_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = DurableStorage::open(dir.path(), tiny_compaction(100)).expect("open");
        mixed_writes(&store, 20).await;
        let before = contents(&store);
        let revision = store.revision();
        drop(store);
        // As if the crash came after the snapshot rename but before the cleanup: an obsolete
        // log (seq 0 < snapshot seq) is still there, even with garbage in it.
        fs::write(log_path(dir.path(), 0), b"KRLWAL01 obsolete garbage").expect("write");
        let store = open(dir.path());
        assert_eq!(store.revision(), revision);
        assert_eq!(contents(&store), before);
        assert!(!log_path(dir.path(), 0).exists());
    }

    #[tokio::test]
    async fn damaged_snapshot_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = DurableStorage::open(dir.path(), tiny_compaction(100)).expect("open");
        mixed_writes(&store, 20).await;
        drop(store);
        let snapshot = dir.path().join(&files(dir.path(), ".snap")[0]);
        let len = fs::metadata(&snapshot).expect("meta").len();
        OpenOptions::new()
            .write(true)
            .open(&snapshot)
            .expect("open")
            .set_len(len - 1)
            .expect("truncate");
        assert!(matches!(
            DurableStorage::open(dir.path(), options()),
            Err(StorageError::Recover { .. })
        ));
    }

    #[tokio::test]
    async fn torn_log_header_is_restarted() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(open(dir.path()));
        let log = only_log(dir.path());
        fs::write(&log, b"KRL").expect("tear header");
        let store = open(dir.path());
        assert_eq!(store.revision(), core::INITIAL_REVISION);
        put(&store, "/core/configmaps/ns/a", json!({})).await;
        drop(store);
        let store = open(dir.path());
        assert!(store.get("/core/configmaps/ns/a").is_some());
    }

    #[tokio::test]
    async fn writes_after_close_are_refused_cleanly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        drop(
            store
                .requests
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let result = store
            .update(
                "/core/configmaps/ns/a".to_string(),
                conformance::put_fn(json!({})),
            )
            .await;
        assert_eq!(result.map_err(|e| e.code).err(), Some(503));
    }

    #[test]
    fn frames_round_trip_and_detect_damage() {
        let mut frames = ArrayFrames::new(Vec::new(), 10);
        for i in 0..5 {
            frames.push(&json!({"i": i})).expect("push");
        }
        frames.close().expect("close");
        let buf = frames.buf;
        let mut pos = 0;
        let mut items = Vec::new();
        while let Frame::Intact { payload, next } = read_frame(&buf, pos) {
            let chunk: Vec<Value> = serde_json::from_slice(payload).expect("json array");
            items.extend(chunk);
            pos = next;
        }
        assert_eq!(pos, buf.len());
        assert_eq!(items.len(), 5);
        assert!(matches!(
            read_frame(&buf[..buf.len() - 1], 0),
            Frame::Intact { .. }
        ));
        let mut damaged = buf.clone();
        damaged[FRAME_HEADER + 1] ^= 1;
        assert!(matches!(
            read_frame(&damaged, 0),
            Frame::Damaged {
                why: "checksum mismatch",
                declared_end: Some(_)
            }
        ));
        assert!(matches!(
            read_frame(&buf[..3], 0),
            Frame::Damaged {
                declared_end: None,
                ..
            }
        ));
    }
}
