//! Red team 3 (docs/redteam-2026-12.md): the rename-first answer must follow the mount table.
//! A journalled ext4 says "ordered"; the same directory after `remount,noauto_da_alloc`, or
//! the same loop device holding an ext4 without a journal, must say "not ordered" (fsync
//! first) in the same process. Needs root, `mkfs.ext4` and `losetup`: ignored by default
//! (`cargo test --lib mounts::redteam -- --ignored`).

use super::*;
use std::process::Command;

/// The tests here attach and mount loop devices: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Unmounts and detaches whatever is still mounted / attached when the test ends.
struct Cleanup {
    mnt: PathBuf,
    loopdev: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.loopdev]).status();
    }
}

#[test]
#[ignore = "needs root: mounts loop devices"]
fn the_answer_follows_a_remount_and_a_reused_loop_device() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_string_lossy().into_owned();
    for (img, journal) in [("j.img", true), ("n.img", false)] {
        run("truncate", &["-s", "32M", &p(img)]);
        let mut args = vec!["-q", "-F"];
        if !journal {
            args.extend(["-O", "^has_journal"]);
        }
        let img = p(img);
        args.push(&img);
        run("mkfs.ext4", &args);
    }
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let loopdev = run("losetup", &["-f", "--show", &p("j.img")]);
    let _cleanup = Cleanup {
        mnt: mnt.clone(),
        loopdev: loopdev.clone(),
    };
    let m = mnt.to_string_lossy().into_owned();
    run("mount", &[&loopdev, &m]);
    assert!(
        orders_data_before_rename(&mnt),
        "journalled ext4, data=ordered, auto_da_alloc"
    );

    run("mount", &["-o", "remount,noauto_da_alloc", &m]);
    assert!(
        !orders_data_before_rename(&mnt),
        "remounted noauto_da_alloc: the cached answer is stale"
    );

    run("umount", &[&m]);
    run("losetup", &["-d", &loopdev]);
    run("losetup", &[&loopdev, &p("n.img")]);
    run("mount", &[&loopdev, &m]);
    assert!(
        !orders_data_before_rename(&mnt),
        "the same loop device now holds an ext4 without a journal"
    );
}

/// The live answer for mounts an attacker or an odd machine may present: only a journalled
/// ext4 in ordered or journal mode (also bind-mounted, also at a path with a space and a
/// backslash) says "ordered"; writeback, ext2, ext4 without a journal and an overlay on top of
/// a journalled ext4 say "fsync first".
#[test]
#[ignore = "needs root: mounts loop devices"]
fn the_live_answer_for_odd_mounts() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_string_lossy().into_owned();
    let mk = |img: &str, args: &[&str]| {
        run("truncate", &["-s", "32M", &p(img)]);
        let mut a: Vec<&str> = vec!["-q", "-F"];
        a.extend_from_slice(args);
        let path = p(img);
        a.push(&path);
        run(
            if img.starts_with("e2") {
                "mkfs.ext2"
            } else {
                "mkfs.ext4"
            },
            &a,
        );
    };
    mk("j.img", &[]);
    mk("n.img", &["-O", "^has_journal"]);
    mk("e2.img", &[]);
    let mut mounted: Vec<PathBuf> = Vec::new();
    let mut mount = |name: &str, args: &[&str]| -> PathBuf {
        let m = d.path().join(name);
        std::fs::create_dir_all(&m).unwrap();
        let ms = m.to_string_lossy().into_owned();
        let mut a: Vec<&str> = args.to_vec();
        a.push(&ms);
        run("mount", &a);
        mounted.push(m.clone());
        m
    };
    let cases: Vec<(PathBuf, bool, &str)> = vec![
        (
            mount("j", &["-o", "loop", &p("j.img")]),
            true,
            "journalled ext4",
        ),
        (
            mount("with space\\x", &["-o", "loop,data=journal", &p("j.img")]),
            true,
            "data=journal, odd path",
        ),
        (
            mount("n", &["-o", "loop", &p("n.img")]),
            false,
            "ext4 without a journal",
        ),
        (mount("e2", &["-o", "loop", &p("e2.img")]), false, "ext2"),
    ];
    // A second mount of j.img is the same superblock: the first mount's options hold (the
    // kernel refuses another data mode), so "data=journal" above may fail; see below.
    for (m, want, what) in &cases {
        assert_eq!(orders_data_before_rename(m), *want, "{what} at {m:?}");
    }
    let wb_img = p("wb.img");
    run("truncate", &["-s", "32M", &wb_img]);
    run("mkfs.ext4", &["-q", "-F", &wb_img]);
    let wb = mount("wb", &["-o", "loop,data=writeback", &wb_img]);
    assert!(!orders_data_before_rename(&wb), "data=writeback");
    let bind_src = d.path().join("j").join("sub");
    std::fs::create_dir_all(&bind_src).unwrap();
    let bind = mount("bind", &["--bind", &bind_src.to_string_lossy()]);
    assert!(
        orders_data_before_rename(&bind),
        "a bind mount of a journalled ext4"
    );
    for sub in ["upper", "work", "lower"] {
        std::fs::create_dir_all(d.path().join("j").join(sub)).unwrap();
    }
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        p("j/lower"),
        p("j/upper"),
        p("j/work")
    );
    let ovl = mount("ovl", &["-t", "overlay", "overlay", "-o", &opts]);
    assert!(
        !orders_data_before_rename(&ovl),
        "overlayfs over a journalled ext4"
    );
    for m in mounted.iter().rev() {
        let _ = Command::new("umount").arg(m).status();
    }
}
