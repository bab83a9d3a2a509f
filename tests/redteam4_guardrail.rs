//! Red team 4: the guardrail's one-walk path lookup (`plain.rs`, `FsProbe::lstat_plain`, the
//! look-ahead in `paths.rs`, `judge_use`). Every request here is checked twice through the
//! public API, with the real probe ([`RealFs`]: `openat2` per stretch) and with a probe that
//! has no `lstat_plain` (the per-component walk): the verdicts must be equal, and every request
//! touching a protected file or leaving the project must be left (not approved).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use c2c_bridge::policy::guardrail::{
    check_with, FsProbe, Node, PathContext, PermissionRequest, RealFs,
};

/// The real file system without the one-walk probe (the reference walk).
struct PerComponent;
impl FsProbe for PerComponent {
    fn lstat(&self, p: &Path) -> Node {
        RealFs.lstat(p)
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        RealFs.read_link(p)
    }
    fn read_dir(&self, p: &Path) -> Option<Vec<(std::ffi::OsString, Node)>> {
        RealFs.read_dir(p)
    }
    fn read_file(&self, p: &Path) -> Option<String> {
        RealFs.read_file(p)
    }
    fn kernel_fs(&self, p: &Path) -> bool {
        RealFs.kernel_fs(p)
    }
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `$T/w` the project (with `a/b/c/`, `.git/config`, `.env`), `$T/home` the home (with
/// `.ssh/id_rsa`, `.bashrc`).
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let t = fs::canonicalize(dir.path()).unwrap();
    let w = t.join("w");
    let home = t.join("home");
    for d in ["w/a/b/c", "w/.git/hooks", "home/.ssh", "w/a/b/m"] {
        fs::create_dir_all(t.join(d)).unwrap();
    }
    for f in [
        "w/a/b/c/f",
        "w/.git/config",
        "w/.env",
        "home/.ssh/id_rsa",
        "home/.bashrc",
    ] {
        fs::write(t.join(f), "x\n").unwrap();
    }
    (dir, w, home)
}

fn edit(p: &str) -> PermissionRequest {
    PermissionRequest {
        permission: "edit".into(),
        filepath: Some(p.into()),
        patterns: vec![p.into()],
        args: serde_json::json!({ "filePath": p }),
        ..Default::default()
    }
}

fn read(p: &str) -> PermissionRequest {
    PermissionRequest {
        permission: "read".into(),
        filepath: Some(p.into()),
        patterns: vec![p.into()],
        args: serde_json::json!({ "filePath": p }),
        ..Default::default()
    }
}

fn bash(cmd: &str) -> PermissionRequest {
    PermissionRequest {
        permission: "bash".into(),
        command: Some(cmd.into()),
        patterns: vec![cmd.into()],
        args: serde_json::json!({ "command": cmd }),
        ..Default::default()
    }
}

/// Both walks' verdicts on `req` (`true`: left), asserted equal.
fn left(req: &PermissionRequest, ctx: &PathContext) -> bool {
    let fast = check_with(req, ctx, &RealFs);
    let slow = check_with(req, ctx, &PerComponent);
    assert_eq!(
        fast.as_ref().map(|h| &h.reason),
        slow.as_ref().map(|h| &h.reason),
        "one walk and per-component walk disagree on {req:?}"
    );
    fast.is_some()
}

fn all_requests(p: &str) -> Vec<PermissionRequest> {
    let mut v = write_requests(p);
    v.extend([read(p), bash(&format!("cat {p}"))]);
    v
}

/// Writes only: for places whose reads are allowed (`.git/hooks`).
fn write_requests(p: &str) -> Vec<PermissionRequest> {
    vec![
        edit(p),
        bash(&format!("echo x > {p}")),
        bash(&format!("rm -f {p}")),
    ]
}

/// Odd spellings of protected files behind 3+ plain components (the look-ahead's stretch):
/// `//`, `/./`, a trailing `/`, `..` right after the stretch, case variants, a hard link of a
/// key inside the project.
#[test]
fn odd_spellings_of_protected_files_are_left_by_both_walks() {
    let (_d, w, home) = tree();
    fs::hard_link(home.join(".ssh/id_rsa"), w.join("a/b/c/key")).unwrap();
    let ctx = PathContext::new(&w, &w, &home);
    let w = w.to_str().unwrap();
    let mut n = 0;
    for p in [
        format!("{w}/a/b/c/../../../.env"),
        format!("{w}/a/b/c/../../../.git/config"),
        format!("{w}//a//b//c//..//..//..//.git//config"),
        format!("{w}/a/./b/./c/./../../../.GIT/CONFIG"),
        format!("{w}/a/b/c/../../../../home/.ssh/id_rsa"),
        format!("{w}/a/b/c/../../../../home/.bashrc"),
        format!("{w}/a/b/c/key"),
        format!("{w}/a/b/c/key/"),
        format!("{w}/a/b/c/f/../../../../.env"),
    ] {
        for req in all_requests(&p) {
            assert!(left(&req, &ctx), "approved: {req:?}");
            n += 1;
        }
    }
    for p in [
        format!("{w}/a/b/c/../../../.git/hooks/pre-commit"),
        format!("{w}/a/b/c/../../../.git/hooks/"),
        format!("{w}/a/b/c/../../../.Git/Hooks/x"),
    ] {
        for req in write_requests(&p) {
            assert!(left(&req, &ctx), "approved: {req:?}");
            n += 1;
        }
    }
    assert!(n > 40);
    // The same walk approves a plain file of the project (the check can say yes).
    assert!(!left(&edit(&format!("{w}/a/b/c/f")), &ctx));
}

/// A path longer than `PATH_MAX` (openat2 says ENAMETOOLONG; `lstat` too): both walks leave
/// it, and a long path inside the project under `PATH_MAX` is judged equally.
#[test]
fn very_long_paths_are_judged_alike() {
    let (_d, w, home) = tree();
    let ctx = PathContext::new(&w, &w, &home);
    let seg = "d".repeat(200);
    let mut deep = w.clone();
    for _ in 0..19 {
        deep.push(&seg);
    }
    fs::create_dir_all(&deep).unwrap();
    let deep_s = deep.to_str().unwrap().to_string();
    assert!(deep_s.len() < 4096);
    assert!(!left(&edit(&format!("{deep_s}/f")), &ctx));
    let mut too_long = deep_s.clone();
    for _ in 0..3 {
        too_long.push('/');
        too_long.push_str(&seg);
    }
    assert!(too_long.len() > 4096);
    let _ = left(&edit(&format!("{too_long}/f")), &ctx);
    let back = format!("{deep_s}{}", "/..".repeat(19)) + "/.env";
    for req in all_requests(&back) {
        assert!(left(&req, &ctx), "approved: {req:?}");
    }
}

/// Mounts inside the project (root only; each unmounted after): a bind mount of `~/.ssh`
/// (its key is left by name) and a procfs (a chroot build tree's `rootfs/proc`): both walks
/// agree, and every access is left. Before red team 4's fix `p/<pid>/environ`,
/// `p/self/environ` and `p/<pid>/fd/0` were approved for read and write.
#[test]
fn mounts_inside_the_project_are_judged_alike() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (_d, w, home) = tree();
    let ctx = PathContext::new(&w, &w, &home);
    let keys = w.join("a/b/m");
    let procfs = w.join("a/b/c/p");
    fs::create_dir_all(&procfs).unwrap();
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    assert!(ok(Command::new("mount")
        .arg("--bind")
        .arg(home.join(".ssh"))
        .arg(&keys)));
    let proc_ok = ok(Command::new("mount")
        .args(["-t", "proc", "proc"])
        .arg(&procfs));
    let sysfs = w.join("a/b/c/s");
    fs::create_dir_all(&sysfs).unwrap();
    let sys_ok = ok(Command::new("mount")
        .args(["-t", "sysfs", "sysfs"])
        .arg(&sysfs));
    let ws = w.to_str().unwrap();
    let me = std::process::id();
    let mut verdicts = Vec::new();
    for p in [
        format!("{ws}/a/b/m/id_rsa"),
        format!("{ws}/a/b/c/p/{me}/environ"),
        format!("{ws}/a/b/c/p/{me}/root/etc/shadow"),
        format!("{ws}/a/b/c/p/{me}/cwd/.env"),
        format!("{ws}/a/b/c/p/self/environ"),
        format!("{ws}/a/b/c/p/{me}/fd/0"),
    ] {
        for req in all_requests(&p) {
            verdicts.push((format!("{} {p}", req.permission), left(&req, &ctx)));
        }
    }
    // A recursive read of a tree holding the procfs mount.
    for cmd in [
        format!("grep -r secret {ws}/a/b/c"),
        format!("grep -r secret {ws}/a/b/c/p/{me}"),
    ] {
        verdicts.push((cmd.clone(), left(&bash(&cmd), &ctx)));
    }
    for p in [
        format!("{ws}/a/b/c/s/kernel/rcu_expedited"),
        format!("{ws}/a/b/c/s/kernel/mm"),
    ] {
        for req in all_requests(&p) {
            verdicts.push((format!("{} {p}", req.permission), left(&req, &ctx)));
        }
    }
    if sys_ok {
        let _ = Command::new("umount").arg(&sysfs).status();
    }
    if proc_ok {
        let _ = Command::new("umount").arg(&procfs).status();
    }
    let _ = Command::new("umount").arg(&keys).status();
    let approved: Vec<&String> = verdicts
        .iter()
        .filter(|(_, l)| !l)
        .map(|(w, _)| w)
        .collect();
    assert!(
        approved.is_empty(),
        "approved through mounts: {approved:#?}"
    );
}

/// A directory without search permission on the way (meaningful when the test runs
/// unprivileged: `setpriv --reuid=65534 --regid=65534 --clear-groups <test binary>`; root
/// searches anyway): `openat2` and `lstat` both fail with EACCES, and the request is left by
/// both walks. Without search permission on the parent of the last component alone, likewise.
#[test]
fn a_directory_without_search_permission_is_judged_alike() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, w, home) = tree();
    let ctx = PathContext::new(&w, &w, &home);
    let nox = w.join("a/b/nox");
    fs::create_dir_all(nox.join("d/e")).unwrap();
    fs::write(nox.join("d/e/f"), "x").unwrap();
    fs::set_permissions(&nox, fs::Permissions::from_mode(0o600)).unwrap();
    let ws = w.to_str().unwrap();
    let unprivileged = !is_root();
    for p in [
        format!("{ws}/a/b/nox/d/e/f"),
        format!("{ws}/a/b/nox/d/e/new"),
        format!("{ws}/a/b/nox/d/../../../../.env"),
        format!("{ws}/a/b/nox/x"),
    ] {
        for req in all_requests(&p) {
            let l = left(&req, &ctx);
            if unprivileged && !p.ends_with(".env") {
                assert!(l, "approved without search permission: {req:?}");
            }
        }
    }
    fs::set_permissions(&nox, fs::Permissions::from_mode(0o700)).unwrap();
}

/// Device nodes inside the project (root only: `mknod`; a chroot or image build tree with
/// its own `dev/` holds such): writing or reading one writes or reads the device (a disk,
/// `/dev/mem`), whatever directory it sits in. Only `/dev/null` itself is harmless.
#[test]
fn device_nodes_inside_the_project_are_left() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (_d, w, home) = tree();
    let ctx = PathContext::new(&w, &w, &home);
    let ws = w.to_str().unwrap();
    let made = |args: &[&str]| {
        Command::new("mknod")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    assert!(made(&[&format!("{ws}/a/b/c/blk"), "b", "7", "200"]));
    assert!(made(&[&format!("{ws}/a/b/c/mem"), "c", "1", "1"]));
    let mut approved = Vec::new();
    for dev in ["blk", "mem"] {
        for p in [format!("{ws}/a/b/c/{dev}"), format!("a/b/c/{dev}")] {
            for req in all_requests(&p) {
                if !left(&req, &ctx) {
                    approved.push(format!(
                        "{} {:?}",
                        req.permission,
                        req.command.as_ref().unwrap_or(&p)
                    ));
                }
            }
        }
    }
    assert!(
        approved.is_empty(),
        "approved device accesses: {approved:#?}"
    );
}
