//! Red team 3 (docs/redteam-2026-12.md): the rename-first answer must follow the mount table.
//! A journalled ext4 says "ordered"; the same directory after `remount,noauto_da_alloc`, or
//! the same loop device holding an ext4 without a journal, must say "not ordered" (fsync
//! first) in the same process. Needs root, `mkfs.ext4` and `losetup`: ignored by default
//! (`cargo test --lib mounts::redteam -- --ignored`).

use super::*;
use std::process::Command;

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
