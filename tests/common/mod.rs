//! Helpers for the c2c interop tests: a private copy of the broker root the real c2c 0.8.0
//! CLI wrote (`tests/fixtures/c2c-0.8/`), live stand-in processes for its peers, and a
//! `lockf` holder in another process (what c2c does when it locks a sidecar).

#![allow(dead_code)]

use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The fixture root as c2c wrote it.
pub fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/c2c-0.8/basic-root")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

/// A copy of the fixture root in a fresh 0700 temp dir, and its path.
pub fn copy_fixture() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let root = d.path().join("broker");
    copy_tree(&fixture_root(), &root);
    (d, root)
}

/// A child process that lives until dropped, standing in for a c2c client.
pub struct LiveProcess(pub Child);

impl LiveProcess {
    /// Start one (`sleep 600`).
    pub fn start() -> LiveProcess {
        LiveProcess(Command::new("sleep").arg("600").spawn().unwrap())
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for LiveProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Field 22 of `/proc/<pid>/stat`.
pub fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(19).unwrap().parse().unwrap()
}

/// Rewrite the registration of `session_id` in `root` to the live `pid`, keeping every
/// other field and record as c2c wrote it.
pub fn make_alive(root: &Path, session_id: &str, pid: u32) {
    let path = root.join("registry.json");
    let mut regs: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for r in &mut regs {
        if r["session_id"] == session_id {
            r["pid"] = pid.into();
            r["pid_start_time"] = start_time(pid).into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&regs).unwrap()).unwrap();
}

/// Shift the fixture's pending slots so they were created just now (they were opened with
/// c2c's 600 s TTL when the fixture was made, and have expired since).
pub fn refresh_pending(root: &Path) {
    let path = root.join("pending_permissions.json");
    let mut slots: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for s in &mut slots {
        let ttl = s["expires_at"].as_f64().unwrap() - s["created_at"].as_f64().unwrap();
        s["created_at"] = now.into();
        s["expires_at"] = (now + ttl).into();
    }
    std::fs::write(&path, serde_json::to_vec(&slots).unwrap()).unwrap();
}

/// Read a JSON file.
pub fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Another process holding exclusive `lockf(F_LOCK)` locks — c2c's call — on `paths` until
/// dropped. `None` when python3 is not installed.
pub struct LockfHolder {
    child: Child,
}

impl LockfHolder {
    /// Take the locks (creating the files 0644, as c2c does) and wait until they are held.
    pub fn hold(paths: &[PathBuf]) -> Option<LockfHolder> {
        let script = "import fcntl,os,sys\n\
            fds=[]\n\
            for p in sys.argv[1:]:\n\
            \x20   fd=os.open(p,os.O_RDWR|os.O_CREAT,0o644)\n\
            \x20   fcntl.lockf(fd,fcntl.LOCK_EX)\n\
            \x20   fds.append(fd)\n\
            print('locked',flush=True)\n\
            sys.stdin.read()\n";
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(paths)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "the lockf holder did not start");
        Some(LockfHolder { child })
    }

    /// Let go (the holder exits, the kernel releases its locks).
    pub fn release(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}

impl Drop for LockfHolder {
    fn drop(&mut self) {
        self.stop();
    }
}
