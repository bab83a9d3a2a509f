//! Issue 16: the one-walk probe (`plain.rs`, `FsProbe::lstat_plain`) only saves system calls.
//! Every path of a generated tree (directories, files, a hard link, a FIFO, symlinks relative,
//! absolute, dangling, looping, chained, with `..` in their targets, to `/proc`; missing parts,
//! `..` after a symlink, trailing `/`) resolves to the same answer with it as with the
//! per-component walk alone, and every edit of those paths gets the same verdict.

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::plain::plain_lstat;
use super::super::*;

/// The real file system without the one-walk probe: the per-component walk (the reference).
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
}

/// [`RealFs`] counting how often `lstat_plain` answered and how often it did not.
#[derive(Default)]
struct Counting {
    answered: AtomicUsize,
    declined: AtomicUsize,
}
impl FsProbe for Counting {
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
    fn lstat_plain(&self, p: &Path) -> Option<Node> {
        let n = RealFs.lstat_plain(p);
        match n {
            Some(_) => self.answered.fetch_add(1, Ordering::Relaxed),
            None => self.declined.fetch_add(1, Ordering::Relaxed),
        };
        n
    }
}

/// `$T/w` (worktree and session directory) with directories, files, a hard link, a FIFO and
/// symlinks of every kind; `$T/home` is `$HOME`.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let t = fs::canonicalize(dir.path()).unwrap();
    let w = t.join("w");
    for d in ["a/b/c", "a/.git/hooks", "home/.ssh", "d"] {
        fs::create_dir_all(w.join(d)).unwrap();
    }
    fs::create_dir_all(t.join("home")).unwrap();
    for f in ["f", "a/g", "a/b/c/k", "a/.env", "home/.ssh/id_rsa"] {
        fs::write(w.join(f), "x\n").unwrap();
    }
    fs::hard_link(w.join("a/g"), w.join("h")).unwrap();
    nix::unistd::mkfifo(&w.join("p"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for (link, target) in [
        ("l1", "a/b".to_string()),
        ("l2", w.join("a").to_string_lossy().into_owned()),
        ("l3", "nope/x".to_string()),
        ("l4", "l4".to_string()),
        ("l5", "f".to_string()),
        ("l6", "l1".to_string()),
        ("a/b/up", "../..".to_string()),
        ("l7", "a/b/up/a".to_string()),
        ("l8", "/proc/self".to_string()),
        ("l9", "a/.git".to_string()),
        ("d/l10", "../home/.ssh".to_string()),
        ("l11", "/".to_string()),
    ] {
        symlink(target, w.join(link)).unwrap();
    }
    (dir, w)
}

const NAMES: &[&str] = &[
    "a", "b", "c", "f", "g", "h", "k", "p", "d", ".git", ".env", "home", ".ssh", "l1", "l2", "l3",
    "l4", "l5", "l6", "up", "l7", "l8", "l9", "l10", "l11", "..", ".", "", "missing",
];

/// Every path of up to three of [`NAMES`] under `w` (and with a trailing `/`), and 3,000
/// pseudo-random ones of four to seven.
fn paths(w: &Path) -> Vec<String> {
    let w = w.to_str().unwrap();
    let mut out = Vec::new();
    let mut push = |comps: &[&str]| {
        let p = format!("{w}/{}", comps.join("/"));
        out.push(format!("{p}/"));
        out.push(p);
    };
    for a in NAMES {
        push(&[a]);
        for b in NAMES {
            push(&[a, b]);
            for c in NAMES {
                push(&[a, b, c]);
            }
        }
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 4 + (x % 4) as usize;
        let comps: Vec<&str> = (0..len)
            .map(|k| NAMES[((x >> (8 * k)) % NAMES.len() as u64) as usize])
            .collect();
        push(&comps);
    }
    out
}

#[test]
fn one_walk_resolution_equals_the_per_component_walk() {
    let (_dir, w) = tree();
    let home = w.parent().unwrap().join("home");
    let ctx = PathContext::new(&w, &w, &home);
    let counting = Counting::default();
    let mut fast_c = Checker::new(&ctx, &counting, false);
    let mut slow_c = Checker::new(&ctx, &PerComponent, false);
    let mut n = 0;
    for raw in paths(&w) {
        for follow in [false, true] {
            // Emptied memos per path, as per check: no memo carries an answer over.
            for c in [&mut fast_c, &mut slow_c] {
                c.lstat_memo.borrow_mut().clear();
                c.plain_memo.borrow_mut().clear();
                c.link_memo.borrow_mut().clear();
            }
            let fast = fast_c.resolve(&[], &raw, follow);
            let slow = slow_c.resolve(&[], &raw, follow);
            assert_eq!(fast, slow, "{raw} (follow {follow})");
            n += 1;
        }
    }
    // Both answers were exercised: the one walk answered, and it declined (symlinks on the
    // way, missing parents), so the per-component walk took over.
    let (yes, no) = (
        counting.answered.load(Ordering::Relaxed),
        counting.declined.load(Ordering::Relaxed),
    );
    assert!(n > 40_000, "{n} paths");
    assert!(yes > 10_000 && no > 10_000, "answered {yes}, declined {no}");
}

#[test]
fn one_walk_edit_verdicts_equal_the_per_component_walk() {
    let (_dir, w) = tree();
    let home = w.parent().unwrap().join("home");
    let ctx = PathContext::new(&w, &w, &home);
    let wt = w.to_str().unwrap().to_string();
    let (mut approved, mut left) = (0, 0);
    for raw in paths(&w).into_iter().step_by(7) {
        let rel = raw
            .strip_prefix(&format!("{wt}/"))
            .unwrap_or(&raw)
            .to_string();
        let req = PermissionRequest {
            permission: "edit".into(),
            filepath: Some(raw.clone()),
            patterns: vec![rel],
            args: serde_json::json!({ "filePath": raw }),
            ..Default::default()
        };
        let fast = check_with(&req, &ctx, &RealFs);
        let slow = check_with(&req, &ctx, &PerComponent);
        assert_eq!(fast, slow, "{raw}");
        match fast {
            None => approved += 1,
            Some(_) => left += 1,
        }
    }
    // The generated edits are of both kinds (not all approved, not all left).
    assert!(
        approved > 100 && left > 100,
        "approved {approved}, left {left}"
    );
}

#[test]
fn one_walk_answers_only_for_plain_paths() {
    let (_dir, w) = tree();
    let p = |s: &str| w.join(s);
    assert_eq!(plain_lstat(&p("a/b/c")), Some(Node::Dir));
    assert_eq!(plain_lstat(&p("a/g")), Some(Node::MultiLinked));
    assert_eq!(plain_lstat(&p("f")), Some(Node::File));
    assert_eq!(plain_lstat(&p("p")), Some(Node::Other));
    // a symlink last is not followed; one on the way declines (ELOOP), magic links too
    assert_eq!(plain_lstat(&p("l1")), Some(Node::Symlink));
    assert_eq!(plain_lstat(&p("l1/c")), None);
    assert_eq!(plain_lstat(&p("l8/cwd")), None);
    assert_eq!(plain_lstat(Path::new("/proc/self/cwd/x")), None);
    // missing: the last component only when its parent is a plain directory
    assert_eq!(plain_lstat(&p("a/new")), Some(Node::Missing));
    assert_eq!(plain_lstat(&p("new/x")), None);
    assert_eq!(plain_lstat(&p("l3/x")), None);
    // through a file
    assert_eq!(plain_lstat(&p("f/x")), None);
    // the per-component probe agrees wherever the one walk answers
    for s in ["a/b/c", "a/g", "f", "p", "l1", "a/new"] {
        assert_eq!(plain_lstat(&p(s)), Some(RealFs.lstat(&p(s))), "{s}");
    }
}
