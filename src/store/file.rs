//! Whole-file JSON reads, atomic replacement and JSON-lines appends inside the broker root.
//!
//! # How an atomic replace works
//!
//! 1. create `X.tmp.<pid>` with mode 0600, `O_EXCL | O_NOFOLLOW` (a leftover from a crashed
//!    writer with the same pid is removed first),
//! 2. write the whole JSON document and `fsync` it,
//! 3. `rename` it over `X` (a rename replaces a planted symlink instead of following it),
//! 4. `fsync` the directory so the rename itself survives a crash.
//!
//! Callers hold `X.lock` (see [`super::lock`]), so two writers never share a temp name.
//!
//! # Unreadable is never empty
//!
//! c2c reads a file over 64 KiB, or one it cannot parse, as `[]`, and its next write loses
//! everything. Here an absent file is `[]`, and anything else that is not a JSON array —
//! empty, truncated, garbage, not UTF-8 — is [`Error::StoreCorrupt`]. The bad bytes are first
//! copied aside to `X.corrupt.<epoch-ms>` (0600) for inspection. There is no size limit.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::libc;
use serde_json::Value;

use crate::error::{Error, Result};

/// Open a regular file for reading without following a symlink at its last component.
///
/// `O_NONBLOCK`: a FIFO put in the file's place would otherwise block the `open` until a
/// writer comes, hanging the caller (OpenCode's main thread); it has no effect on a regular
/// file. Anything but a regular file (FIFO, directory, device) is then an error
/// (`InvalidInput`), never read, so it can never read as empty (red team 3).
pub(crate) fn open_read_nofollow(path: &Path) -> std::io::Result<File> {
    open_read_nofollow_meta(path).map(|(file, _)| file)
}

/// [`open_read_nofollow`] and the file's metadata (its `fstat`, taken once).
pub(crate) fn open_read_nofollow_meta(path: &Path) -> std::io::Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, meta))
}

/// Read a JSON-array file. An absent file reads as `[]`.
///
/// # Errors
/// [`Error::StoreCorrupt`] (after copying the bytes aside) when the file is not a JSON array;
/// [`Error::Io`] on any other read failure, including a symlink in the file's place.
pub fn read_array(path: &Path) -> Result<Vec<Value>> {
    match read_bytes(path)? {
        None => Ok(Vec::new()),
        Some((_, bytes)) => parse_array(path, &bytes),
    }
}

/// The bytes of `path` (opened without following a symlink) and the metadata of the file
/// they were read from, taken with `fstat` *before* the read; `None` when it is absent.
///
/// # Errors
/// [`Error::Io`] on any failure other than absence, including a symlink in the file's place.
pub(crate) fn read_bytes(path: &Path) -> Result<Option<(std::fs::Metadata, Vec<u8>)>> {
    Ok(read_bytes_open(path)?.map(|(_, meta, bytes)| (meta, bytes)))
}

/// [`read_bytes`], also returning the open file (a cache keeps it to pin the inode).
pub(crate) fn read_bytes_open(
    path: &Path,
) -> Result<Option<(std::fs::File, std::fs::Metadata, Vec<u8>)>> {
    let (mut file, meta) = match open_read_nofollow_meta(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    Ok(Some((file, meta, bytes)))
}

/// Parse the bytes of a JSON-array file read from `path`; anything but a JSON array is
/// [`Error::StoreCorrupt`] (the bytes are copied aside first).
///
/// # Errors
/// [`Error::StoreCorrupt`].
pub(crate) fn parse_array(path: &Path, bytes: &[u8]) -> Result<Vec<Value>> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(other) => Err(corrupt(
            path,
            bytes,
            format!("expected a JSON array, found {}", json_kind(&other)),
        )),
        Err(e) => Err(corrupt(path, bytes, e.to_string())),
    }
}

/// Read a JSON-object file (a room's `meta.json`); `None` when it is absent.
///
/// # Errors
/// [`Error::StoreCorrupt`] (bytes copied aside) when it is not a JSON object; [`Error::Io`]
/// otherwise, including a symlink in the file's place.
pub fn read_object(path: &Path) -> Result<Option<Value>> {
    let Some((_, bytes)) = read_bytes(path)? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(other) => Err(corrupt(
            path,
            &bytes,
            format!("expected a JSON object, found {}", json_kind(&other)),
        )),
        Err(e) => Err(corrupt(path, &bytes, e.to_string())),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Copy unreadable bytes aside and build the error that names both files.
/// The copy is named after the bytes (`X.corrupt.<first 16 hex of sha256>`), so reading the
/// same bad file again — the plugin looks at an inbox every few seconds — makes no new copy.
fn corrupt(path: &Path, bytes: &[u8], detail: String) -> Error {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(bytes));
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".corrupt.{}", &digest[..16]));
    let copy = path.with_file_name(name);
    let copy_result = match create_new_0600(&copy) {
        Ok(mut f) => f.write_all(bytes).and_then(|_| f.sync_all()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    };
    Error::StoreCorrupt {
        path: path.to_path_buf(),
        copy: copy_result.ok().map(|_| copy),
        detail,
    }
}

fn create_new_0600(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Create `path` (0600, never through a symlink) holding `bytes`, fsync'd. A file already
/// there is left as it is (callers name files after their content).
///
/// # Errors
/// [`Error::Io`] naming the file.
pub(crate) fn write_new_0600(path: &Path, bytes: &[u8]) -> Result<()> {
    match create_new_0600(path) {
        Ok(mut f) => f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| {
            let _ = std::fs::remove_file(path);
            Error::io(path, e)
        }),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Atomically replace `path` with `records` as a JSON array (see the module doc).
///
/// # Errors
/// [`Error::Io`] naming the temp file, the target or the directory that failed.
pub fn write_array_atomic(path: &Path, records: &[Value]) -> Result<()> {
    let bytes = serde_json::to_vec(records).map_err(|e| Error::io(path, e.into()))?;
    write_bytes_atomic(path, &bytes)
}

/// Atomically replace `path` with `bytes` (see the module doc).
///
/// # Errors
/// [`Error::Io`] naming the file that failed.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_durable_file(path, bytes)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Replace `path` with `records` for bookkeeping a crash may lose (e.g. the `resolved_at`
/// stamp of a pending slot), but never at the cost of the file's other records: the atomic
/// replace without the directory fsync and, on file systems that write a new file's data
/// before they commit a `rename` over an existing file (`orders_data_before_rename`),
/// without the data fsync either. After a crash the file is the old version or the new one,
/// whole. The caller holds `X.lock`, as for every write.
///
/// # Errors
/// [`Error::Io`] naming the file that failed.
pub fn write_array_unsynced(path: &Path, records: &[Value]) -> Result<()> {
    write_array_kept(path, records, false).map(drop)
}

/// [`write_array_atomic`] (`durable`) or [`write_array_unsynced`] (not), returning the new
/// file still open and the bytes written (for a cache of the version just written).
///
/// # Errors
/// [`Error::Io`] naming the file that failed.
pub(crate) fn write_array_kept(
    path: &Path,
    records: &[Value],
    durable: bool,
) -> Result<(File, Vec<u8>)> {
    let bytes = serde_json::to_vec(records).map_err(|e| Error::io(path, e.into()))?;
    let file = write_bytes_kept(path, &bytes, durable)?;
    Ok((file, bytes))
}

/// [`write_array_kept`] for a document already serialised: replace `path` with `bytes`
/// (which the caller has made a JSON array), durably or not, and return the new file still
/// open.
///
/// # Errors
/// [`Error::Io`] naming the file that failed.
pub(crate) fn write_bytes_kept(path: &Path, bytes: &[u8], durable: bool) -> Result<File> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file = replace_file(path, bytes, durable || !orders_data_before_rename(dir))?;
    if durable {
        sync_dir(dir)?;
    }
    Ok(file)
}

/// Whether the file system of `dir` writes a file's data before it commits a `rename` of
/// that file over an existing one, so that an un-fsync'd replace leaves the old or the new
/// file after a crash, never an empty one. Decided from the mount, cached per device:
/// [`super::mounts::orders_data_before_rename`] (journalled ext3/ext4 with `data=ordered` or
/// `data=journal` and `auto_da_alloc`, tmpfs; anything else or unknown: `false`).
pub(crate) fn orders_data_before_rename(dir: &Path) -> bool {
    super::mounts::orders_data_before_rename(dir)
}

/// [`write_array_atomic`] with the rename first where that is as safe: the inbox append of
/// `send` (B's watcher wakes on the rename, so the fsyncs no longer delay the recipient).
///
/// When `path` exists and its file system writes a file's data before it commits a rename
/// over an existing file ([`orders_data_before_rename`]): temp file written, renamed over
/// `path`, then the new file's data fsync'd and the directory fsync'd, both before this
/// returns, so what is durable on success is exactly what [`write_array_atomic`] makes
/// durable. A crash before they finish leaves the old file or the new one, whole (the file
/// system's ordering), as the caller has not returned success yet. A first write (no file
/// to replace: `auto_da_alloc` covers only a rename over an existing file) and every other
/// file system keep fsync-before-rename. Returns whether the rename went first.
///
/// # Errors
/// [`Error::Io`] naming the file that failed. An fsync failing after the rename leaves the
/// new file in place and reports the error, as a failed directory fsync does in
/// [`write_array_atomic`].
pub(crate) fn write_array_rename_first(path: &Path, records: &[Value]) -> Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let replacing = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    if !replacing || !orders_data_before_rename(dir) {
        write_array_atomic(path, records)?;
        return Ok(false);
    }
    let bytes = serde_json::to_vec(records).map_err(|e| Error::io(path, e.into()))?;
    let file = replace_file(path, &bytes, false)?;
    file.sync_all().map_err(|e| Error::io(path, e))?;
    sync_dir(dir)?;
    Ok(true)
}

/// Steps 1–3 of an atomic replace (temp file, fsync, rename) without the directory fsync:
/// the caller must [`sync_dir`] the parent before it reports success, and may share that one
/// directory fsync between several files of the same directory.
///
/// # Errors
/// [`Error::Io`] naming the file that failed.
pub(crate) fn replace_durable_file(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file(path, bytes, true).map(drop)
}

/// Temp file, fsync when `sync`, rename (see [`replace_durable_file`]). Returns the new file,
/// still open.
fn replace_file(path: &Path, bytes: &[u8], sync: bool) -> Result<File> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let mut file = match create_new_0600(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            // Left by a crashed writer whose pid we now reuse; we hold X.lock, so no live
            // writer can own it.
            std::fs::remove_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
            create_new_0600(&tmp).map_err(|e| Error::io(&tmp, e))?
        }
        Err(e) => return Err(Error::io(&tmp, e)),
    };
    let written = file
        .write_all(bytes)
        .and_then(|_| if sync { file.sync_all() } else { Ok(()) });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(file)
}

/// fsync a directory so a rename or create inside it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Append one JSON value per line to `path` (created 0600, never through a symlink) and
/// fsync it. A failed append (e.g. ENOSPC) is rolled back: the file is cut back to its old
/// length, or removed when this call created it. Used for `archive/<sid>.jsonl`, `dead-letter.jsonl` and room histories.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn append_jsonl(path: &Path, values: &[Value]) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::with_capacity(256 * values.len());
    for v in values {
        serde_json::to_writer(&mut buf, v).map_err(|e| Error::io(path, e.into()))?;
        buf.push(b'\n');
    }
    let open = |create_new: bool| {
        OpenOptions::new()
            .append(true)
            .create_new(create_new)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    };
    let (mut file, created) = match open(true) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            (open(false).map_err(|e| Error::io(path, e))?, false)
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let before = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if let Err(e) = file.write_all(&buf).and_then(|_| file.sync_data()) {
        // A full disk can take part of the buffer: roll back to the old end (or remove the
        // file this call created), so no torn line is left behind.
        if created {
            let _ = std::fs::remove_file(path);
        } else {
            let _ = file.set_len(before);
        }
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// Replace the JSON-lines file `path` with `lines` (values re-serialised, unparsed lines kept
/// byte for byte), atomically and durably as [`write_bytes_atomic`].
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn write_jsonl_atomic(path: &Path, lines: &[JsonLine]) -> Result<()> {
    let mut bytes = Vec::new();
    for line in lines {
        match line {
            JsonLine::Value(v) => {
                serde_json::to_writer(&mut bytes, v).map_err(|e| Error::io(path, e.into()))?
            }
            JsonLine::Unparsed(s) => bytes.extend_from_slice(s.as_bytes()),
        }
        bytes.push(b'\n');
    }
    write_bytes_atomic(path, &bytes)
}

/// Remove the file `path` (not through a symlink: a symlink in its place is removed itself).
///
/// # Errors
/// [`Error::Io`] naming the file (an absent file too).
pub fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| Error::io(path, e))
}

/// Rotate the log file `path` to `path.1` (older ones shift up to `path.<keep>`, the oldest is
/// removed) when `too_big(current length in bytes)` still holds under its sidecar lock (another
/// process may have rotated already). A lock held by another rotator for 2 s skips the
/// rotation: it is being done.
///
/// # Errors
/// I/O errors of the final rename (earlier shifts are best effort).
pub fn rotate(path: &Path, keep: u32, too_big: impl Fn(u64) -> bool) -> std::io::Result<()> {
    let Ok(_guard) = super::LockGuard::acquire(
        &super::lock::sidecar_path(path),
        std::time::Duration::from_secs(2),
    ) else {
        return Ok(()); // someone else is rotating
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if too_big(m.len()) => {}
        _ => return Ok(()),
    }
    let numbered = |n: u32| std::path::PathBuf::from(format!("{}.{n}", path.display()));
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    std::fs::rename(path, numbered(1))
}

/// [`append_jsonl`] made idempotent for records that move from one file to another:
/// values whose `message_id` already appears among the last `window` bytes of `path` are not
/// appended again. A move appends here first and rewrites its source second; a crash between
/// the two leaves the records in both, and the retry (which finds them still in the source)
/// must not add them twice. Returns how many values were appended.
///
/// The crashed append is at most `window` bytes back when callers pass a window larger than
/// everything the source could have held (see RELIABILITY.md).
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn append_jsonl_once(path: &Path, values: &[Value], window: u64) -> Result<usize> {
    if values.is_empty() {
        return Ok(0);
    }
    let wanted: Vec<&str> = values
        .iter()
        .filter_map(|v| v.get("message_id").and_then(Value::as_str))
        .collect();
    let seen = tail_message_ids(path, window, &wanted)?;
    let fresh: Vec<Value> = values
        .iter()
        .filter(|v| {
            v.get("message_id")
                .and_then(Value::as_str)
                .is_none_or(|id| !seen.contains(id))
        })
        .cloned()
        .collect();
    append_jsonl(path, &fresh)?;
    Ok(fresh.len())
}

/// Which of `wanted` are the `message_id` of a complete line among the last `window` bytes
/// of a JSON-lines file (absent: none).
///
/// Only lines that can hold one of them are parsed: a line whose top-level `message_id` is
/// `id` holds `id`'s bytes verbatim unless a writer escaped some of its characters, so when
/// the tail is UTF-8 with no `\` escapes at all, a line without any wanted id as a substring
/// is skipped unparsed (a substring search, instead of parsing ~256 KiB of JSON per move).
/// Otherwise every line is parsed, as before.
pub(crate) fn tail_message_ids(
    path: &Path,
    window: u64,
    wanted: &[&str],
) -> Result<std::collections::HashSet<String>> {
    use std::io::{Seek, SeekFrom};
    let mut out = std::collections::HashSet::new();
    if wanted.is_empty() {
        return Ok(out);
    }
    let mut file = match open_read_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(path, e)),
    };
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let start = len.saturating_sub(window);
    file.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    let mut body: &[u8] = &bytes;
    if start > 0 {
        // a partial first line
        body = match body.iter().position(|&b| b == b'\n') {
            Some(i) => &body[i + 1..],
            None => &[],
        };
    }
    let verbatim = std::str::from_utf8(body)
        .ok()
        .filter(|t| !t.contains('\\'))
        .filter(|_| wanted.iter().all(|id| !id.is_empty()));
    let mut parse = |line: &[u8]| {
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            if let Some(id) = v.get("message_id").and_then(Value::as_str) {
                if wanted.contains(&id) {
                    out.insert(id.to_string());
                }
            }
        }
    };
    match verbatim {
        Some(text) => text
            .split('\n')
            .filter(|line| wanted.iter().any(|id| line.contains(id)))
            .for_each(|line| parse(line.as_bytes())),
        None => body.split(|&b| b == b'\n').for_each(parse),
    }
    Ok(out)
}

/// Read a JSON-lines file, skipping blank lines. An absent file reads as empty.
///
/// A line that does not parse is returned as [`JsonLine::Unparsed`] rather than dropped, so a
/// rewrite can keep it.
///
/// # Errors
/// [`Error::Io`] on read failures.
pub fn read_jsonl(path: &Path) -> Result<Vec<JsonLine>> {
    let mut file = match open_read_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match serde_json::from_str(l) {
            Ok(v) => JsonLine::Value(v),
            Err(_) => JsonLine::Unparsed(l.to_string()),
        })
        .collect())
}

/// One line of a JSON-lines file.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonLine {
    /// A line that parsed.
    Value(Value),
    /// A line that did not parse, kept verbatim.
    Unparsed(String),
}

/// Make sure `dir` is a real directory (not a symlink), creating it with mode 0700. A
/// directory it creates is made durable: its parent is fsync'd before it returns.
///
/// # Errors
/// [`Error::RootInsecure`] when a symlink or a non-directory stands in its place;
/// [`Error::Io`] when it cannot be created.
pub fn ensure_private_dir(dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => Ok(dir.to_path_buf()),
        Ok(_) => Err(Error::RootInsecure {
            path: dir.to_path_buf(),
            reason: "it is a symlink or not a directory; c2c-bridge never follows symlinks inside the broker root".into(),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .or_else(|e| {
                    if e.kind() == ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| Error::io(dir, e))?;
            sync_dir(dir.parent().unwrap_or(Path::new(".")))?;
            Ok(dir.to_path_buf())
        }
        Err(e) => Err(Error::io(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn absent_reads_as_empty_and_roundtrips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        assert!(read_array(&p).unwrap().is_empty());
        let recs = vec![serde_json::json!({"a": 1, "unknown_field": [1, 2]})];
        write_array_atomic(&p, &recs).unwrap();
        assert_eq!(read_array(&p).unwrap(), recs);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // no temp file left behind
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.json")]);
    }

    #[test]
    fn garbage_truncated_empty_and_non_array_are_corrupt_and_copied_aside() {
        for (i, bytes) in [
            &b"not json"[..],
            b"[{\"a\":1},",
            b"",
            b"{\"a\":1}",
            b"\xff\xfe[]",
        ]
        .iter()
        .enumerate()
        {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join(format!("f{i}.json"));
            std::fs::write(&p, bytes).unwrap();
            let err = read_array(&p).unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::StoreCorrupt, "case {i}");
            match err {
                Error::StoreCorrupt {
                    copy: Some(copy), ..
                } => {
                    assert_eq!(std::fs::read(&copy).unwrap(), *bytes);
                }
                other => panic!("case {i}: {other:?}"),
            }
            // the original is untouched
            assert_eq!(std::fs::read(&p).unwrap(), *bytes);
            // reading it again makes no second copy
            assert!(read_array(&p).is_err());
            let copies = std::fs::read_dir(d.path())
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .contains(".corrupt.")
                })
                .count();
            assert_eq!(copies, 1, "case {i}");
        }
    }

    #[test]
    fn large_files_have_no_size_cliff() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        let recs: Vec<Value> = (0..5000)
            .map(|i| serde_json::json!({"i": i, "pad": "x".repeat(100)}))
            .collect();
        write_array_atomic(&p, &recs).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 64 * 1024 * 4);
        assert_eq!(read_array(&p).unwrap().len(), 5000);
    }

    #[test]
    fn symlinked_data_file_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("secret.json");
        std::fs::write(&target, b"[1]").unwrap();
        let p = d.path().join("registry.json");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert_eq!(
            read_array(&p).unwrap_err().code(),
            crate::ErrorCode::RootInsecure
        );
        // an atomic write replaces the link itself and leaves the target alone
        write_array_atomic(&p, &[serde_json::json!(2)]).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"[1]");
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn append_once_skips_ids_already_at_the_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        let v = |id: &str| serde_json::json!({"message_id": id, "pad": "x".repeat(50)});
        assert_eq!(append_jsonl_once(&p, &[v("m1"), v("m2")], 4096).unwrap(), 2);
        // the retry after a crash: m2 is there already, m3 is new
        assert_eq!(append_jsonl_once(&p, &[v("m2"), v("m3")], 4096).unwrap(), 1);
        let ids: Vec<String> = read_jsonl(&p)
            .unwrap()
            .into_iter()
            .map(|l| match l {
                JsonLine::Value(v) => v["message_id"].as_str().unwrap().to_string(),
                JsonLine::Unparsed(s) => s,
            })
            .collect();
        assert_eq!(ids, vec!["m1", "m2", "m3"]);
        // beyond the window an id is not looked for
        assert_eq!(append_jsonl_once(&p, &[v("m1")], 100).unwrap(), 1);
    }

    #[test]
    fn rename_first_only_replaces_an_existing_file_on_an_ordering_file_system() {
        // Here (the temp dir) and, when it is tmpfs, in /dev/shm: a first write always syncs
        // before its rename; a replace goes rename-first exactly where the mount says so.
        let mut dirs = vec![tempfile::tempdir().unwrap()];
        if Path::new("/dev/shm").is_dir() {
            if let Ok(d) = tempfile::tempdir_in("/dev/shm") {
                dirs.push(d);
            }
        }
        for d in dirs {
            let p = d.path().join("s.inbox.json");
            assert!(
                !write_array_rename_first(&p, &[serde_json::json!(1)]).unwrap(),
                "first write"
            );
            let first =
                write_array_rename_first(&p, &[serde_json::json!(1), serde_json::json!({"b": 2})])
                    .unwrap();
            assert_eq!(first, orders_data_before_rename(d.path()));
            assert_eq!(std::fs::read(&p).unwrap(), br#"[1,{"b":2}]"#);
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600
            );
            let names: Vec<_> = std::fs::read_dir(d.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, vec![std::ffi::OsString::from("s.inbox.json")]);
        }
    }

    #[test]
    fn unsynced_replace_writes_the_whole_file_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pending_permissions.json");
        write_array_atomic(&p, &[serde_json::json!({"a": 1})]).unwrap();
        write_array_unsynced(&p, &[serde_json::json!({"a": 2}), serde_json::json!(3)]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), br#"[{"a":2},3]"#);
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("pending_permissions.json")]
        );
        // a temp file left by a crashed writer with our pid is replaced, as for every write
        let tmp = d.path().join(format!(
            "pending_permissions.json.tmp.{}",
            std::process::id()
        ));
        std::fs::write(&tmp, b"garbage").unwrap();
        write_array_unsynced(&p, &[]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[]");
        assert!(!tmp.exists());
    }

    #[test]
    fn append_once_matches_top_level_ids_only_escaped_or_not() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        // m2 named only in a text and in a nested receipt: not the line's own id
        let other = serde_json::json!({"message_id": "m1", "content": "about m2",
            "receipt": {"message_id": "m2"}});
        append_jsonl(&p, &[other]).unwrap();
        let m2 = serde_json::json!({"message_id": "m2"});
        assert_eq!(
            append_jsonl_once(&p, std::slice::from_ref(&m2), 4096).unwrap(),
            1
        );
        assert_eq!(append_jsonl_once(&p, &[m2], 4096).unwrap(), 0);
        // another writer escaped the id (`\u0033` is "3"): still found
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"message_id\":\"m\\u0033\"}\n")
            .unwrap();
        let m3 = serde_json::json!({"message_id": "m3"});
        assert_eq!(append_jsonl_once(&p, &[m3], 4096).unwrap(), 0);
    }

    #[test]
    fn jsonl_append_and_read_keep_bad_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        append_jsonl(&p, &[serde_json::json!({"a": 1})]).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"garbage\n")
            .unwrap();
        append_jsonl(&p, &[serde_json::json!({"b": 2})]).unwrap();
        let lines = read_jsonl(&p).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1], JsonLine::Unparsed("garbage".into()));
    }
}
