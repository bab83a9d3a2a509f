//! One-walk path probe: [`plain_lstat`] answers for a whole path what `lstat` of each of its
//! prefixes would, with one `openat2(2)` instead of one `lstat(2)` per component (each of
//! which re-walks the path from `/`: O(depth²) in the kernel). Used by [`RealFs`]'s
//! [`FsProbe::lstat_plain`]; any answer it is not sure of is `None`, and the resolver then
//! takes the per-component path it always had.
//!
//! [`RealFs`]: super::RealFs
//! [`FsProbe::lstat_plain`]: super::FsProbe::lstat_plain

use std::path::Path;

use super::Node;

/// What is at the absolute path `p` when no component of it is a symlink and every proper
/// prefix is a directory (so `lstat` of each prefix says [`Node::Dir`]); the last component
/// itself may be anything, a symlink included (not followed), or missing when its parent is
/// a plain directory. `None` otherwise, or when unsure: a symlink or magic link on the way
/// (`ELOOP`), a component missing before the last, a non-directory prefix, permission denied,
/// a kernel without `openat2` (`ENOSYS`), seccomp (`EPERM`), anything unexpected.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(super) fn plain_lstat(p: &Path) -> Option<Node> {
    use nix::errno::Errno;
    match open_plain(p) {
        Ok(n) => Some(n),
        // The last component does not exist: it is `Missing` exactly when its parent is a
        // plain directory (`lstat` says ENOENT, which the probe maps to `Missing`).
        Err(Errno::ENOENT) => {
            let parent = p.parent()?;
            if parent.as_os_str().len() <= 1 || p.file_name().is_none() {
                return None;
            }
            match open_plain(parent) {
                Ok(Node::Dir) => Some(Node::Missing),
                _ => None,
            }
        }
        Err(_) => None,
    }
}

/// Not Linux with glibc: no one-walk probe (the per-component path answers).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) fn plain_lstat(_p: &Path) -> Option<Node> {
    None
}

/// `openat2(p, O_PATH | O_NOFOLLOW | O_CLOEXEC, RESOLVE_NO_SYMLINKS)` (which implies
/// `RESOLVE_NO_MAGICLINKS`), then `fstat` of that descriptor: the `lstat` of `p` when every
/// component before the last was a directory reached without a symlink.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn open_plain(p: &Path) -> nix::Result<Node> {
    use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
    use nix::sys::stat::{fstat, SFlag};
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = openat2(libc_at_fdcwd(), p, how)?;
    let st = fstat(fd);
    let _ = nix::unistd::close(fd);
    let st = st?;
    let fmt = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
    // As `node_of_meta` reads an `lstat`: a regular file with more than one link is
    // `MultiLinked`.
    Ok(if fmt == SFlag::S_IFLNK {
        Node::Symlink
    } else if fmt == SFlag::S_IFDIR {
        Node::Dir
    } else if fmt == SFlag::S_IFREG {
        if st.st_nlink > 1 {
            Node::MultiLinked
        } else {
            Node::File
        }
    } else {
        Node::Other
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn libc_at_fdcwd() -> std::os::fd::RawFd {
    nix::libc::AT_FDCWD
}
