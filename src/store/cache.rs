//! A cache of one parsed store file, keyed on the file's identity: the broker's hot paths
//! (`send`, `listPeers`, `checkPendingReply`) read files that rarely change, and parsing them
//! on every call grows with their size.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::error::Result;

/// Identity of one version of a store file: writers replace the file by `rename`, so new
/// content comes with a new inode; an in-place rewrite changes size or times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileId {
    pub(crate) fn of(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// The later of mtime and ctime, in epoch seconds.
    fn changed_at(&self) -> f64 {
        let t = |(s, ns): (i64, i64)| s as f64 + ns as f64 * 1e-9;
        t(self.mtime).max(t(self.ctime))
    }
}

/// How old (seconds, by its mtime/ctime) a version of the file must have been when we read
/// it before its [`FileId`] alone is trusted to stand for its content. Below that, a file
/// that replaced it could reuse the freed inode number with the same size *and* the same
/// timestamps (timestamps are taken from a coarse clock, and on some file systems have
/// whole-second resolution), so a matching identity is confirmed by comparing the bytes.
pub(crate) const TRUST_AGE_SECS: f64 = 2.0;

#[derive(Debug)]
pub(crate) struct Cached<T> {
    pub(crate) id: FileId,
    /// Wall clock (epoch seconds) just after the bytes were last read and compared.
    pub(crate) checked_at: f64,
    /// The version read, kept open: while it is open its inode cannot be freed, so no file
    /// that replaces it can reuse its inode number. A path whose identity still matches is
    /// then this very inode, however young (every writer of the format replaces files by
    /// `rename`; none writes in place), and `TRUST_AGE_SECS` need not be waited for.
    /// `None` in tests that simulate an unpinned version.
    pub(crate) pin: Option<std::fs::File>,
    bytes: Arc<Vec<u8>>,
    parsed: Arc<T>,
}

/// The current version of a file as [`ParsedFileCache::load_current`] found it: its parse,
/// its exact bytes and its identity (`None` for both when the file is absent). Under the
/// file's lock this is the file as it is, so a writer may build the next version from these
/// bytes (`crate::pending` splices a new slot into them).
#[derive(Debug)]
pub(crate) struct Current<T> {
    /// The parse.
    pub(crate) parsed: Arc<T>,
    /// The bytes it was parsed from.
    pub(crate) bytes: Option<Arc<Vec<u8>>>,
    /// The identity of the version read.
    pub(crate) id: Option<FileId>,
}

/// A cache of one parsed store file (`registry.json`, `pending_permissions.json`).
///
/// Every [`ParsedFileCache::load`] `lstat`s the file. The parse is reused when the file's
/// identity (device, inode, size, mtime and ctime with nanoseconds) is unchanged and that
/// version is still held open by the cache (see `Cached::pin`) or was at least
/// `TRUST_AGE_SECS` old when read; otherwise the file is read again and, if its bytes are
/// unchanged, the parse is reused. A write through the owning handle
/// calls [`ParsedFileCache::invalidate`]. Anything time-dependent (liveness, expiry) is
/// evaluated by the caller on every call, never cached here.
#[derive(Debug)]
pub struct ParsedFileCache<T> {
    pub(crate) slot: Mutex<Option<Cached<T>>>,
    /// How many times the file's bytes were read (tests check when the cache is bypassed).
    #[cfg(test)]
    pub(crate) reads: std::sync::atomic::AtomicUsize,
}

impl<T> Default for ParsedFileCache<T> {
    fn default() -> Self {
        ParsedFileCache {
            slot: Mutex::new(None),
            #[cfg(test)]
            reads: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

/// The caches shared by every handle of this process, by (parse type, file path).
type SharedCaches = HashMap<(TypeId, PathBuf), Weak<dyn Any + Send + Sync>>;
static SHARED: Mutex<Option<SharedCaches>> = Mutex::new(None);

impl<T: Default + Send + Sync + 'static> ParsedFileCache<T> {
    /// The cache of `path` shared by every handle in this process that reads it as `T`
    /// (created on first use, dropped with its last handle).
    ///
    /// Sharing changes no answer: a cache holds nothing but a parse of the file's bytes and
    /// checks the file's identity on every load, whichever handle asks. It saves memory and
    /// parses: each of N handles on one root (one per OpenCode session) holding its own parse
    /// of a registry of N sessions grew as N² (≈ 0.7 MB per handle at 1,000 registrations).
    pub fn shared(path: &Path) -> Arc<Self> {
        let mut map = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        let map = map.get_or_insert_with(HashMap::new);
        let key = (TypeId::of::<T>(), path.to_path_buf());
        if let Some(cache) = map
            .get(&key)
            .and_then(Weak::upgrade)
            .and_then(|any| any.downcast::<Self>().ok())
        {
            return cache;
        }
        map.retain(|_, w| w.strong_count() > 0);
        let cache = Arc::new(Self::default());
        let any: Arc<dyn Any + Send + Sync> = cache.clone();
        map.insert(key, Arc::downgrade(&any));
        cache
    }
}

/// A parse of a JSON-array store file that can be rebuilt from its records, so a
/// read-modify-write can start from the cached version and leave the written one in the cache
/// ([`crate::store::update_array_cached`]).
pub trait ArrayParse: Default {
    /// Parse the bytes of the file read from `path`.
    ///
    /// # Errors
    /// [`crate::Error::StoreCorrupt`] for anything but a JSON array.
    fn parse(path: &Path, bytes: &[u8]) -> Result<Self>;
    /// The records, in file order.
    fn records(&self) -> &[serde_json::Value];
    /// The parse of a file holding exactly `records`.
    fn from_records(records: Vec<serde_json::Value>) -> Self;
}

/// A read-only descriptor on `path` with its identity, when `path` is still the inode this
/// process has just written (`written`, closed here); `None` otherwise or when an identity
/// cannot be read. Read-only: a descriptor open for writing would keep the file system from
/// being remounted read-only.
fn pin_written(path: &Path, written: std::fs::File) -> Option<(std::fs::File, FileId)> {
    let written_id = written.metadata().ok().map(|m| FileId::of(&m));
    drop(written);
    let (f, meta) = super::file::open_read_nofollow_meta(path).ok()?;
    let id = FileId::of(&meta);
    (Some(id) == written_id).then_some((f, id))
}

impl<T: Default> ParsedFileCache<T> {
    /// Make `parsed` the cached parse of the version of the file this process has just
    /// written to `path`: `written` is that version (opened for writing), `bytes` its
    /// content. The version is pinned by a *read-only* descriptor opened on `path` (see
    /// `Cached::pin`; a descriptor open for writing would keep the file system from being
    /// remounted read-only), and only when that is still the inode just written; otherwise,
    /// or if its identity cannot be read, the cache is emptied instead.
    pub(crate) fn install(&self, path: &Path, written: std::fs::File, bytes: Vec<u8>, parsed: T) {
        let pinned = pin_written(path, written);
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let old = std::mem::replace(
            &mut *slot,
            pinned.map(|(file, id)| Cached {
                id,
                checked_at: crate::time::now_secs(),
                pin: Some(file),
                bytes: Arc::new(bytes),
                parsed: Arc::new(parsed),
            }),
        );
        drop(slot);
        discard(old);
    }

    /// [`ParsedFileCache::install`] for a version this process has just written by changing
    /// the version `expected` (found by [`ParsedFileCache::load_current`] under the file's
    /// lock): when the cache still holds `expected` and nobody else holds its parse, `update`
    /// turns that parse into the new version's in place (no clone, no parse); otherwise the new
    /// version is parsed from `bytes` with `parse` (a failure empties the cache). The replaced
    /// version's descriptor is closed off this thread (`super::retire`).
    pub(crate) fn install_updated(
        &self,
        path: &Path,
        written: std::fs::File,
        bytes: Vec<u8>,
        expected: Option<FileId>,
        update: impl FnOnce(&mut T),
        parse: impl FnOnce(&Path, &[u8]) -> Result<T>,
    ) {
        let pinned = pin_written(path, written);
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let old = slot.take();
        let Some((file, id)) = pinned else {
            drop(slot);
            discard(old);
            return;
        };
        let mut reused = None;
        if let Some(old) = old {
            let Cached {
                id: old_id,
                pin,
                bytes: old_bytes,
                parsed: mut old_parsed,
                ..
            } = old;
            super::retire::retire(pin);
            drop(old_bytes);
            if Some(old_id) == expected {
                if let Some(t) = Arc::get_mut(&mut old_parsed) {
                    update(t);
                    reused = Some(old_parsed);
                }
            }
        }
        let parsed = match reused {
            Some(p) => p,
            None => match parse(path, &bytes) {
                Ok(t) => Arc::new(t),
                Err(_) => return,
            },
        };
        *slot = Some(Cached {
            id,
            checked_at: crate::time::now_secs(),
            pin: Some(file),
            bytes: Arc::new(bytes),
            parsed,
        });
    }

    /// An empty cache of this handle's own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget the cached parse (after a write of the file).
    pub fn invalidate(&self) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The parse of `path` (an absent file parses as `T::default()`), by `parse(path, bytes)`.
    ///
    /// # Errors
    /// As [`crate::store::read_array`]: I/O errors (a symlink in the file's place included)
    /// and whatever `parse` returns (e.g. [`crate::Error::StoreCorrupt`]).
    pub fn load(
        &self,
        path: &Path,
        parse: impl FnOnce(&Path, &[u8]) -> Result<T>,
    ) -> Result<Arc<T>> {
        self.load_current(path, parse).map(|c| c.parsed)
    }

    /// [`ParsedFileCache::load`], also returning the bytes and identity of the version.
    ///
    /// # Errors
    /// As [`ParsedFileCache::load`].
    pub(crate) fn load_current(
        &self,
        path: &Path,
        parse: impl FnOnce(&Path, &[u8]) -> Result<T>,
    ) -> Result<Current<T>> {
        let absent = || Current {
            parsed: Arc::new(T::default()),
            bytes: None,
            id: None,
        };
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let current = |c: &Cached<T>| Current {
            parsed: Arc::clone(&c.parsed),
            bytes: Some(Arc::clone(&c.bytes)),
            id: Some(c.id),
        };
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_file() => {
                if let Some(c) = slot.as_ref() {
                    let id = FileId::of(&m);
                    if c.id == id
                        && (c.pin.is_some() || id.changed_at() + TRUST_AGE_SECS <= c.checked_at)
                    {
                        return Ok(current(c));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                discard(slot.take());
                return Ok(absent());
            }
            // A symlink, another file type or a failed stat: the read below reports it.
            _ => {}
        }
        #[cfg(test)]
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::trace!(path = ?path, "parse cache: identity changed or not held, reading");
        let Some((file, meta, bytes)) = super::file::read_bytes_open(path)? else {
            discard(slot.take());
            return Ok(absent());
        };
        let id = FileId::of(&meta);
        let checked_at = crate::time::now_secs();
        if let Some(c) = slot.as_mut().filter(|c| *c.bytes == *bytes) {
            c.id = id;
            c.checked_at = checked_at;
            super::retire::retire(c.pin.replace(file));
            return Ok(current(c));
        }
        tracing::debug!(path = ?path, bytes = bytes.len(), "parse cache miss: parsing");
        let parsed = Arc::new(parse(path, &bytes)?);
        let old = slot.replace(Cached {
            id,
            checked_at,
            pin: Some(file),
            bytes: Arc::new(bytes),
            parsed: Arc::clone(&parsed),
        });
        let out = slot.as_ref().map(current).unwrap_or_else(absent);
        drop(slot);
        discard(old);
        Ok(out)
    }
}

/// Drop a replaced version: its pinned descriptor is closed off this thread
/// ([`super::retire`]), the rest here.
fn discard<T>(old: Option<Cached<T>>) {
    if let Some(mut c) = old {
        super::retire::retire(c.pin.take());
    }
}

#[cfg(test)]
mod update_tests {
    use super::*;
    use serde_json::{json, Value};
    use std::sync::atomic::Ordering;

    #[derive(Default, Debug)]
    struct Recs(Vec<Value>);
    impl ArrayParse for Recs {
        fn parse(path: &Path, bytes: &[u8]) -> Result<Self> {
            crate::store::file::parse_array(path, bytes).map(Recs)
        }
        fn records(&self) -> &[Value] {
            &self.0
        }
        fn from_records(records: Vec<Value>) -> Self {
            Recs(records)
        }
    }

    fn push(p: &Path, c: &ParsedFileCache<Recs>, v: Value, durable: bool) {
        crate::store::update_array_cached(p, Duration::from_secs(2), durable, c, |r| {
            r.push(v);
            Ok(((), true))
        })
        .unwrap();
    }
    use std::time::Duration;

    #[test]
    fn a_cached_update_starts_from_the_cache_and_leaves_the_new_version_in_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        let c = ParsedFileCache::<Recs>::new();
        push(&p, &c, json!(1), true);
        push(&p, &c, json!(2), false);
        // both writes read nothing (absent file, then the installed version) ...
        assert_eq!(c.reads.load(Ordering::Relaxed), 0);
        // ... the file and the cache agree, and a read finds the installed parse
        assert_eq!(std::fs::read(&p).unwrap(), b"[1,2]");
        assert_eq!(c.load(&p, Recs::parse).unwrap().0, vec![json!(1), json!(2)]);
        assert_eq!(c.reads.load(Ordering::Relaxed), 0);
        // another writer's replacement (a new inode) is read before the next update
        crate::store::write_array_atomic(&p, &[json!(9)]).unwrap();
        push(&p, &c, json!(3), true);
        assert_eq!(c.reads.load(Ordering::Relaxed), 1);
        assert_eq!(std::fs::read(&p).unwrap(), b"[9,3]");
        // an update that changes nothing writes nothing
        crate::store::update_array_cached(&p, Duration::from_secs(2), true, &c, |_| {
            Ok(((), false))
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[9,3]");
    }
}
