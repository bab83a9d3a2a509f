//! A sweep removes the temp files of writers killed mid-replace (red team 3: 22 such 0600
//! copies of inboxes were left by 120 `kill -9`s, and nothing removed them).

use std::time::{Duration, SystemTime};

use c2c_bridge::{Broker, OpenOptions};

/// A pid no process has: past the kernel's pid_max (at most 2^22).
const DEAD_PID: u32 = 4_194_305;

fn plant(path: &std::path::Path, age: Duration) {
    std::fs::write(path, b"[{\"content\":\"copy of a message\"}]").unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn a_sweep_removes_old_temp_files_of_dead_writers_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("broker");
    let b = Broker::open(OpenOptions {
        session_id: "ses_sweeper".into(),
        alias: Some("sweeper".into()),
        root: Some(root.clone()),
        directory: Some(dir.path().to_path_buf()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap();
    let old = Duration::from_secs(3600);
    let dead_inbox_tmp = root.join(format!("ses_sweeper.inbox.json.tmp.{DEAD_PID}"));
    let dead_registry_tmp = root.join(format!("registry.json.tmp.{DEAD_PID}"));
    let young = root.join(format!("pending_permissions.json.tmp.{DEAD_PID}"));
    let live = root.join(format!("registry.json.tmp.{}", std::process::id()));
    plant(&dead_inbox_tmp, old);
    plant(&dead_registry_tmp, old);
    plant(&young, Duration::ZERO);
    plant(&live, old);
    let room = root.join("rooms").join("lobby");
    std::fs::create_dir_all(&room).unwrap();
    let room_tmp = room.join(format!("members.json.tmp.{DEAD_PID}"));
    plant(&room_tmp, old);
    let inbox_before = std::fs::read(root.join("ses_sweeper.inbox.json")).ok();

    let report = b.sweep().unwrap();

    assert_eq!(report.temp_files_removed, 3);
    assert!(!dead_inbox_tmp.exists() && !dead_registry_tmp.exists() && !room_tmp.exists());
    assert!(young.exists(), "a temp file younger than a minute is kept");
    assert!(live.exists(), "a live process's temp file is kept");
    assert_eq!(
        std::fs::read(root.join("ses_sweeper.inbox.json")).ok(),
        inbox_before,
        "the files they were copies of are untouched"
    );
    assert!(b.list_peers().unwrap().iter().any(|p| p.alias == "sweeper"));
}
