//! Full disk (ENOSPC) and a read-only root (EROFS) on a small tmpfs (issue 12): every
//! operation that must write fails with `E_IO` naming a path inside the root, and nothing
//! already stored changes (append-only logs may only have grown). Needs root for `mount`;
//! skipped with one line otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use c2c_bridge::broker::SendOptions;
use c2c_bridge::receipts::Status;
use c2c_bridge::{Broker, ErrorCode, OpenOptions};

struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn open(root: &Path, sid: &str, alias: &str) -> c2c_bridge::error::Result<Broker> {
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.parent().unwrap().to_path_buf()),
        inbound: Some("accept".into()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
}

fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            snapshot(&p, out);
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
}

/// Every stored file is unchanged; JSON-lines files and the log may only have grown.
fn assert_unchanged(root: &Path, before: &BTreeMap<PathBuf, Vec<u8>>, strict: bool) {
    let mut after = BTreeMap::new();
    snapshot(root, &mut after);
    for (p, old) in before {
        let new = after
            .get(p)
            .unwrap_or_else(|| panic!("{} disappeared", p.display()));
        let name = p.file_name().unwrap().to_string_lossy();
        let appendable = name.ends_with(".jsonl") || name == "broker.log";
        if strict || !appendable {
            assert_eq!(new, old, "{} changed", p.display());
        } else {
            assert!(new.starts_with(old), "{} rewritten", p.display());
        }
    }
    for p in after.keys() {
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(
            before.contains_key(p) || name.ends_with(".lock"),
            "new file {}",
            p.display()
        );
    }
}

/// Run every writing operation; each must fail with E_IO naming a path inside `root`.
fn every_write_fails(root: &Path, a: &Broker, b: &Broker, stored: &str) -> usize {
    let io = |what: &str, r: c2c_bridge::error::Result<()>| {
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{what} succeeded on a full/read-only root"));
        assert_eq!(e.code(), ErrorCode::Io, "{what}: {e}");
        let text = e.to_string();
        assert!(
            text.contains(&root.display().to_string()),
            "{what}: no path in {text:?}"
        );
    };
    let o = SendOptions::default();
    let big = "x".repeat(12 * 1024);
    io("send", a.send("bob", &big, &o).map(drop));
    io("sendAll", a.send_all(&big, &o).map(drop));
    io("room post", a.send_room("lobby", &big, &o).map(drop));
    io(
        "openPendingReply",
        a.open_pending_reply("perm-full", "permission", &["bob".into()])
            .map(drop),
    );
    io("register", open(root, "ses_new", "newcomer").map(drop));
    io("drain", b.drain().map(drop));
    io("ack", b.ack(&[stored.to_string()]).map(drop));
    io(
        "acknowledge",
        b.acknowledge(&[stored.to_string()], Status::Delivered)
            .map(drop),
    );
    8
}

#[test]
fn full_disk_and_read_only_root_fail_with_e_io_and_change_nothing() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("full_disk: skipped (mounting a tmpfs needs root)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("full_disk: skipped (mount -t tmpfs failed)");
        return;
    }
    let _m = Mount(mnt.clone());
    let root = mnt.join("broker");
    let a = open(&root, "ses_a", "alice").unwrap();
    let b = open(&root, "ses_b", "bob").unwrap();
    a.join_room("lobby").unwrap();
    b.join_room("lobby").unwrap();
    let stored = a
        .send(
            "bob",
            "stored before the disk filled",
            &SendOptions::default(),
        )
        .unwrap()
        .message_id;
    a.open_pending_reply("perm-1", "permission", &["bob".into()])
        .unwrap();
    b.gate_inbox().unwrap();

    // Fill the file system to the last page.
    let mut filler = std::fs::File::create(mnt.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    loop {
        use std::io::Write;
        if filler
            .write_all(&chunk)
            .and_then(|_| filler.sync_data())
            .is_err()
        {
            break;
        }
    }
    let mut before = BTreeMap::new();
    snapshot(&root, &mut before);
    let n = every_write_fails(&root, &a, &b, &stored);
    assert_unchanged(&root, &before, false);
    // Reading still works, and finds what was stored.
    assert_eq!(b.peek().unwrap()[0].message_id, stored);

    // A read-only root (EROFS): the same, and not even a log line is added.
    drop(filler);
    std::fs::remove_file(mnt.join("filler")).unwrap();
    let ro = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ro.success());
    let mut before = BTreeMap::new();
    snapshot(&root, &mut before);
    let n2 = every_write_fails(&root, &a, &b, &stored);
    assert_unchanged(&root, &before, true);
    assert_eq!(b.peek().unwrap()[0].message_id, stored);
    eprintln!("full_disk: {n} operations failed with E_IO on ENOSPC, {n2} on EROFS; nothing stored changed");
}
