//! Which file system holds a directory, and whether it writes a file's data before it commits
//! a `rename` of that file over an existing one ([`orders_data_before_rename`]).
//!
//! Where it does, a replace may skip the data fsync (a crash leaves the old file or the new
//! one, whole, never an empty one), or do it after the rename (see
//! [`super::file::write_array_rename_first`]). The answer comes from the mount, never from
//! `statfs` alone: ext2 (no journal, no ordering at all) shares its magic number with ext3 and
//! ext4, and the magic says nothing of `data=writeback` or `noauto_da_alloc`.
//!
//! # The rule (Linux; every other system: `false`)
//!
//! | file system (`/proc/self/mountinfo` fstype) | orders data before a rename over an existing file |
//! |---|---|
//! | `ext3`, `ext4` | only with a journal in `data=ordered` or `data=journal` mode and `auto_da_alloc` on: both read from `/proc/fs/ext4/<dev>/options`, which lists every option (defaults included); `data=writeback` or `noauto_da_alloc` in the mount's super options, or no `data=` line (ext4 without a journal prints none), or an unreadable file: `false` |
//! | `tmpfs` | yes (nothing survives a crash, so no order can be observed) |
//! | `btrfs` | `false`: since Linux 2.6.30 it flushes a file renamed over an existing one (commit 5a3f23d515a2, "Btrfs: add extra flushing for renames and truncates"), but today's `btrfs_rename` only starts that writeback (`filemap_fdatawrite_kick`) and a commit waits for it only with `flushoncommit`; not certain, so the safe answer |
//! | anything else (`ext2`, `xfs`, `f2fs`, `nfs`, `overlay`, `fuse`, …) or unreadable | `false` |
//!
//! Source for ext3/ext4: the kernel's ext4 documentation (`Documentation/admin-guide/ext4.rst`,
//! `auto_da_alloc`: "ext4 will detect the replace-via-rename and replace-via-truncate patterns
//! and force that any delayed allocation blocks are allocated such that at the next journal
//! commit, in the default data=ordered mode, the data blocks of the new file are forced to
//! disk before the rename() operation is committed"; the option came with commit afd4672dc761,
//! "ext4: Add auto_da_alloc mount option"). A crash cannot be simulated here, so this is what
//! the code relies on, not what the tests prove.
//!
//! The mount of a directory is found by its device number (`st_dev` = mountinfo's
//! `major:minor`; the last such mount wins, as a later mount hides an earlier one). A
//! directory whose device no mount lists (a btrfs subvolume, a mount this process cannot see)
//! is on an unknown file system: `false`. Answers are cached per device until the mount table
//! changes ([`orders_data_before_rename`]).

use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo` (proc(5)), the fields this module needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountEntry {
    /// The device, `major:minor` (field 3).
    pub dev: (u32, u32),
    /// Where it is mounted, unescaped (field 5; `\040` is a space and so on).
    pub mount_point: PathBuf,
    /// The file system type (first field after the ` - ` separator), e.g. `ext4`.
    pub fstype: String,
    /// The mount source (second field after the separator), e.g. `/dev/vda`.
    pub source: String,
    /// The per-superblock options (third field after the separator), split at commas.
    pub super_options: Vec<String>,
}

/// Undo mountinfo's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash).
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse one mountinfo line; `None` for a line that does not have the documented shape.
pub(crate) fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    let (before, after) = line.split_once(" - ")?;
    let mut pre = before.split(' ');
    let _id = pre.next()?;
    let _parent = pre.next()?;
    let (major, minor) = pre.next()?.split_once(':')?;
    let _root = pre.next()?;
    let mount_point = pre.next()?;
    let mut post = after.split(' ');
    let fstype = post.next()?;
    let source = post.next()?;
    let super_options = post.next().unwrap_or("");
    if fstype.is_empty() || !mount_point.starts_with('/') {
        return None;
    }
    Some(MountEntry {
        dev: (major.parse().ok()?, minor.parse().ok()?),
        mount_point: PathBuf::from(unescape(mount_point)),
        fstype: unescape(fstype),
        source: unescape(source),
        super_options: super_options
            .split(',')
            .filter(|o| !o.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// The mount holding `canonical` on device `dev`: the last entry with that device, else the
/// entry with the longest mount point that is a prefix of `canonical` (path components).
pub(crate) fn find_mount<'a>(
    entries: &'a [MountEntry],
    dev: (u32, u32),
    canonical: &Path,
) -> Option<&'a MountEntry> {
    entries.iter().rev().find(|e| e.dev == dev).or_else(|| {
        entries
            .iter()
            .filter(|e| canonical.starts_with(&e.mount_point))
            .max_by_key(|e| e.mount_point.components().count())
    })
}

/// The decision of the module doc's table for one mount. `ext4_options` is the content of
/// `/proc/fs/ext4/<dev>/options` for that mount (`None` when unreadable).
pub(crate) fn mount_orders_data(mount: &MountEntry, ext4_options: Option<&str>) -> bool {
    match mount.fstype.as_str() {
        "tmpfs" => true,
        "ext3" | "ext4" => {
            let off = |o: &str| o == "data=writeback" || o == "noauto_da_alloc";
            if mount.super_options.iter().any(|o| off(o)) {
                return false;
            }
            let Some(all) = ext4_options else {
                return false;
            };
            let opts: Vec<&str> = all
                .split(['\n', ','])
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .collect();
            let journalled = opts
                .iter()
                .any(|o| *o == "data=ordered" || *o == "data=journal");
            journalled && opts.contains(&"auto_da_alloc") && !opts.iter().any(|o| off(o))
        }
        _ => false,
    }
}

/// The kernel's name for a block device (`/proc/fs/ext4/<name>`): the last component of
/// `/sys/dev/block/<major>:<minor>`'s link, else of the mount source.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn block_device_name(mount: &MountEntry) -> Option<String> {
    let (major, minor) = mount.dev;
    std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| {
            Path::new(&mount.source)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .filter(|n| !n.is_empty() && !n.contains('/') && n != "." && n != "..")
}

/// Whether the file system of `dir` writes a file's data before it commits a `rename` of that
/// file over an existing one (the module doc's table). Unknown, unreadable or not Linux:
/// `false`, the safe answer (callers then fsync before the rename).
///
/// Answers are cached per device while the mount table is unchanged: a mount, unmount or
/// remount in this mount namespace (`poll` on `/proc/self/mountinfo` reports `POLLPRI`,
/// proc(5)) empties the cache, since a device number is reused by the next file system on a
/// loop device or an anonymous device, and a remount may turn `auto_da_alloc` off (red team
/// 3). Without that watch nothing is cached.
pub(crate) fn orders_data_before_rename(dir: &Path) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::unix::fs::MetadataExt;
        use std::sync::Mutex;
        static CACHE: Mutex<Option<Answers>> = Mutex::new(None);
        let Ok(meta) = std::fs::metadata(dir) else {
            return false;
        };
        let dev = meta.dev();
        let mut guard = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let answers = guard.get_or_insert_with(Answers::default);
        if answers.watch.is_none() {
            answers.by_dev.clear();
            answers.watch = std::fs::File::open("/proc/self/mountinfo").ok();
        }
        let Some(watch) = &answers.watch else {
            return decide_now(dir, dev);
        };
        if mount_table_changed(watch) {
            answers.by_dev.clear();
        }
        if let Some(v) = answers.by_dev.get(&dev) {
            return *v;
        }
        let answer = decide_now(dir, dev);
        answers.by_dev.insert(dev, answer);
        answer
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = dir;
        false
    }
}

/// The cached answers of [`orders_data_before_rename`], per device (`st_dev`), and the open
/// `/proc/self/mountinfo` whose `poll` says when they are stale.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Default)]
struct Answers {
    watch: Option<std::fs::File>,
    by_dev: std::collections::HashMap<u64, bool>,
}

/// Whether the mount table changed since `watch` last said (or was opened): `poll` with no
/// wait reports `POLLPRI`/`POLLERR` once per change (proc(5), `/proc/<pid>/mounts`). A failed
/// `poll` counts as a change.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn mount_table_changed(watch: &std::fs::File) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLPRI)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => fds[0]
            .revents()
            .is_none_or(|r| r.intersects(PollFlags::POLLPRI | PollFlags::POLLERR)),
        Err(_) => true,
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn decide_now(dir: &Path, dev: u64) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let Ok(canonical) = std::fs::canonicalize(dir) else {
        return false;
    };
    let entries: Vec<MountEntry> = text.lines().filter_map(parse_mountinfo_line).collect();
    let dev = (
        nix::sys::stat::major(dev) as u32,
        nix::sys::stat::minor(dev) as u32,
    );
    let Some(mount) = find_mount(&entries, dev, &canonical) else {
        return false;
    };
    // Found by path only: the directory is on another file system than that mount (a btrfs
    // subvolume, or one this process cannot see), whose kind is unknown (red team 3).
    if mount.dev != dev {
        return false;
    }
    let ext4_options = match mount.fstype.as_str() {
        "ext3" | "ext4" => block_device_name(mount)
            .and_then(|n| std::fs::read_to_string(format!("/proc/fs/ext4/{n}/options")).ok()),
        _ => None,
    };
    mount_orders_data(mount, ext4_options.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict
30 27 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
40 27 8:1 / /mnt/old rw - ext2 /dev/sda1 rw
41 27 8:2 / /mnt/wb rw - ext4 /dev/sda2 rw,data=writeback
42 27 8:3 / /mnt/nada rw - ext4 /dev/sda3 rw,noauto_da_alloc
43 27 0:45 / /srv/with\\040space rw - btrfs /dev/sdb rw,ssd,space_cache=v2
44 27 0:46 / /srv/x rw shared:5 master:2 - xfs /dev/sdc rw,attr2
45 27 8:1 / /mnt/old2 rw - ext2 /dev/sda1 rw";

    /// What `/proc/fs/ext4/<dev>/options` lists for a journalled ext4 with the defaults, and
    /// for one without a journal (no `data=` line: the kernel clears the data mode).
    const EXT4_ORDERED: &str =
        "rw\ndelalloc\nbarrier\nauto_da_alloc\ndata=ordered\nerrors=continue\n";
    const EXT4_NOJOURNAL: &str =
        "rw\nbsddf\ndelalloc\nnojournal_checksum\nbarrier\nauto_da_alloc\nerrors=continue\n";

    fn entries() -> Vec<MountEntry> {
        SAMPLE.lines().filter_map(parse_mountinfo_line).collect()
    }

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let e = entries();
        assert_eq!(e.len(), 9);
        assert_eq!(e[1].dev, (254, 0));
        assert_eq!(e[1].fstype, "ext4");
        assert_eq!(e[1].source, "/dev/vda");
        assert_eq!(e[1].super_options, ["rw", "discard", "resv_strict"]);
        assert_eq!(e[6].mount_point, PathBuf::from("/srv/with space"));
        assert_eq!(e[7].fstype, "xfs");
        assert_eq!(parse_mountinfo_line("garbage"), None);
        assert_eq!(parse_mountinfo_line("1 2 x / / rw - ext4 /dev/a rw"), None);
        assert_eq!(unescape(r"a\134b\011c\0"), "a\\b\tc\\0");
    }

    #[test]
    fn the_mount_is_found_by_device_then_by_longest_prefix() {
        let e = entries();
        // By device: the last of two mounts of 8:1 wins.
        assert_eq!(
            find_mount(&e, (8, 1), Path::new("/anything"))
                .unwrap()
                .mount_point,
            PathBuf::from("/mnt/old2")
        );
        // An unknown device (a btrfs subvolume, say): the longest prefix.
        assert_eq!(
            find_mount(&e, (0, 99), Path::new("/dev/shm/x/y"))
                .unwrap()
                .fstype,
            "tmpfs"
        );
        assert_eq!(
            find_mount(&e, (0, 99), Path::new("/home/u"))
                .unwrap()
                .fstype,
            "ext4"
        );
        assert_eq!(
            find_mount(&e, (0, 99), Path::new("/srv/with space/a"))
                .unwrap()
                .fstype,
            "btrfs"
        );
        // A prefix by bytes is not a prefix by components.
        assert_eq!(
            find_mount(&e, (0, 99), Path::new("/srv/xy"))
                .unwrap()
                .mount_point,
            PathBuf::from("/")
        );
        assert!(find_mount(&[], (0, 1), Path::new("/")).is_none());
    }

    #[test]
    fn only_journalled_ext3_4_with_auto_da_alloc_and_tmpfs_order_data() {
        let e = entries();
        let by = |fs_dev: (u32, u32)| e.iter().rev().find(|m| m.dev == fs_dev).unwrap();
        // ext4 with the defaults (a journal, data=ordered, auto_da_alloc).
        assert!(mount_orders_data(by((254, 0)), Some(EXT4_ORDERED)));
        assert!(mount_orders_data(
            by((254, 0)),
            Some("rw,data=journal,auto_da_alloc")
        ));
        // ext4 without a journal, unreadable options, or auto_da_alloc off: no.
        assert!(!mount_orders_data(by((254, 0)), Some(EXT4_NOJOURNAL)));
        assert!(!mount_orders_data(by((254, 0)), None));
        assert!(!mount_orders_data(
            by((254, 0)),
            Some("rw\ndata=ordered\nnoauto_da_alloc\n")
        ));
        assert!(!mount_orders_data(
            by((254, 0)),
            Some("rw\ndata=writeback\nauto_da_alloc\n")
        ));
        // The mount's own super options say writeback / noauto_da_alloc: no, whatever else.
        assert!(!mount_orders_data(by((8, 2)), Some(EXT4_ORDERED)));
        assert!(!mount_orders_data(by((8, 3)), Some(EXT4_ORDERED)));
        // ext2 (the same statfs magic as ext4): never.
        assert!(!mount_orders_data(by((8, 1)), Some(EXT4_ORDERED)));
        assert!(mount_orders_data(by((0, 27)), None));
        // btrfs: not certain (see the module doc), so no.
        assert!(!mount_orders_data(by((0, 45)), None));
        assert!(!mount_orders_data(by((0, 46)), None));
    }

    #[test]
    fn the_live_answer_matches_the_table_for_this_machine() {
        // Whatever the machine, the live answer is the table's answer for the mount found.
        let dir = std::env::temp_dir();
        let live = orders_data_before_rename(&dir);
        assert_eq!(orders_data_before_rename(&dir), live, "cached");
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::MetadataExt;
            let dev = std::fs::metadata(&dir).unwrap().dev();
            assert_eq!(decide_now(&dir, dev), live);
            if Path::new("/dev/shm").is_dir() {
                let shm_dev = std::fs::metadata("/dev/shm").unwrap().dev();
                let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
                let e: Vec<MountEntry> = text.lines().filter_map(parse_mountinfo_line).collect();
                let m = find_mount(
                    &e,
                    (
                        nix::sys::stat::major(shm_dev) as u32,
                        nix::sys::stat::minor(shm_dev) as u32,
                    ),
                    Path::new("/dev/shm"),
                );
                if m.is_some_and(|m| m.fstype == "tmpfs") {
                    assert!(orders_data_before_rename(Path::new("/dev/shm")));
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "mounts_redteam_tests.rs"]
mod redteam_tests;
