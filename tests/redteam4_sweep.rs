//! Red team 4: the sweep of dead writers' temp files (`store/leftovers.rs`, `Broker::sweep`)
//! deletes files. It must delete only regular files of ours named `X.tmp.<pid>` (pid dead, a
//! minute old, X's lock free) directly in the root, `held/`, `archive/` or a room directory,
//! never through a symlink, and create nothing outside those directories.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use c2c_bridge::{Broker, OpenOptions};

/// A pid no process has: past the kernel's pid_max (at most 2^22).
const DEAD_PID: u32 = 4_194_305;

fn plant(path: &Path) {
    std::fs::write(path, b"user data").unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

fn broker(dir: &Path) -> (Broker, PathBuf) {
    let root = dir.join("broker");
    let b = Broker::open(OpenOptions {
        session_id: "ses_sweeper".into(),
        alias: Some("sweeper".into()),
        root: Some(root.clone()),
        directory: Some(dir.to_path_buf()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap();
    (b, root)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `rooms` itself a symlink to a directory of the user's (`rooms -> ~/work`): the sweep
/// listed it and swept every directory in it, deleting the user's `X.tmp.<n>` files there and
/// creating `X.lock` files beside them.
#[test]
fn a_symlinked_rooms_directory_is_not_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (b, root) = broker(dir.path());
    let home = dir.path().join("home");
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let users = project.join(format!("notes.txt.tmp.{DEAD_PID}"));
    plant(&users);
    let rooms = root.join("rooms");
    let _ = std::fs::remove_dir_all(&rooms);
    std::os::unix::fs::symlink(&home, &rooms).unwrap();
    let before = names(&project);

    let report = b.sweep().unwrap();

    assert!(
        users.exists(),
        "the user's file behind rooms -> ~ was deleted"
    );
    assert_eq!(
        names(&project),
        before,
        "files were created behind rooms -> ~"
    );
    assert_eq!(report.temp_files_removed, 0);
}

/// A symlinked room, `held/` or `archive/` (each `-> ~/project`) is not swept either.
#[test]
fn symlinked_room_held_and_archive_directories_are_not_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (b, root) = broker(dir.path());
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let users = project.join(format!("notes.txt.tmp.{DEAD_PID}"));
    plant(&users);
    std::fs::create_dir_all(root.join("rooms")).unwrap();
    for link in [
        root.join("rooms/lobby"),
        root.join("held"),
        root.join("archive"),
    ] {
        let _ = std::fs::remove_dir_all(&link);
        std::os::unix::fs::symlink(&project, &link).unwrap();
    }
    let before = names(&project);

    b.sweep().unwrap();

    assert!(users.exists());
    assert_eq!(names(&project), before);
}

/// A temp name whose target is `.` or `..` (`..tmp.<pid>`, `...tmp.<pid>`): the target's
/// lock path then named the swept directory's parent (`<root>.lock`, `<parent>/.lock`), a
/// file created outside the broker root.
#[test]
fn a_dot_target_creates_no_lock_outside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let (b, root) = broker(dir.path());
    std::fs::create_dir_all(root.join("rooms/lobby")).unwrap();
    for d in [root.clone(), root.join("rooms/lobby")] {
        plant(&d.join(format!("..tmp.{DEAD_PID}")));
        plant(&d.join(format!("...tmp.{DEAD_PID}")));
    }
    let outside = names(dir.path());
    let rooms = names(&root.join("rooms"));

    b.sweep().unwrap();

    assert_eq!(
        names(dir.path()),
        outside,
        "a file was created beside the root"
    );
    assert_eq!(
        names(&root.join("rooms")),
        rooms,
        "a file was created in rooms/"
    );
}

/// A store file of ours whose name ends in `.tmp.<digits>` cannot be made by a peer: room ids
/// are `[A-Za-z0-9_-]+` and every file named after a session id has a suffix. A session id
/// `x.tmp.<dead pid>` names `x.tmp.<pid>.inbox.json`, which the sweep leaves.
#[test]
fn a_session_id_shaped_like_a_temp_name_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, root) = broker(dir.path());
    let sid = format!("x.tmp.{DEAD_PID}");
    let peer = Broker::open(OpenOptions {
        session_id: sid.clone(),
        alias: Some("peer".into()),
        root: Some(root.clone()),
        directory: Some(dir.path().to_path_buf()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap();
    let before = names(&root);
    let report = b.sweep().unwrap();
    assert_eq!(report.temp_files_removed, 0);
    for n in &before {
        if n.starts_with(&sid) {
            assert!(root.join(n).exists(), "{n} was removed");
        }
    }
    drop(peer);
}

/// Another user's file of a temp file's name (root only: chowned to nobody), a hard link of
/// a file outside the root under a temp name (removing the name leaves the file), and a temp
/// file whose target's lock a c2c-style `lockf` holder (another process) holds: only the
/// hard link's name goes.
#[test]
fn other_users_files_and_locked_targets_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (b, root) = broker(dir.path());
    let theirs = root.join(format!("registry.json.tmp.{DEAD_PID}"));
    plant(&theirs);
    let root_user = nix::unistd::geteuid().is_root();
    if root_user {
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    }
    let outside = dir.path().join("notes.txt");
    plant(&outside);
    let linked = root.join(format!("c2c-bridge-aliases.json.tmp.{DEAD_PID}"));
    std::fs::hard_link(&outside, &linked).unwrap();
    // The inbox's lock held by another process (as c2c's lockf holder would).
    let locked = root.join(format!("ses_sweeper.inbox.json.tmp.{DEAD_PID}"));
    plant(&locked);
    let lock = root.join("ses_sweeper.inbox.lock");
    // python3's `fcntl.lockf`, as c2c takes it; skipped where python3 is missing.
    let mut holder = Some(()).and_then(|_| {
            std::process::Command::new("python3")
                .args([
                    "-c",
                    "import fcntl,sys,time\nf=open(sys.argv[1],'a+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('held',flush=True)\ntime.sleep(30)",
                ])
                .arg(&lock)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .ok()
        });
    if let Some(h) = holder.as_mut() {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(h.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "held");
    }

    let report = b.sweep().unwrap();

    if let Some(mut h) = holder {
        let _ = h.kill();
        let _ = h.wait();
        assert!(
            locked.exists(),
            "a temp file whose target's lock is held was removed"
        );
    }
    if root_user {
        assert!(theirs.exists(), "another user's file was removed");
    }
    assert!(!linked.exists());
    assert_eq!(std::fs::read(&outside).unwrap(), b"user data");
    assert!(report.temp_files_removed >= 1);
}
