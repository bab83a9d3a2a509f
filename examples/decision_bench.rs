//! Micro-benchmark of the permission decision's Rust half on a 10,000-message turn index:
//! `TurnIndex::provenance` (the `parentID` walk) and `guardrail::check` (the protected-path
//! check, real file system), separately and together.
//!
//! A benchmark, not a test: it asserts nothing about time. Run by `npm run bench`
//! (`bench/run.mjs`) after `cargo build --release --example decision_bench`; prints one JSON
//! object per figure on stdout: `{"name", "iterations", "ns": [sorted samples]}` is too big,
//! so it prints `{"name", "iterations", "min_ns", "median_ns", "p99_ns", "p999_ns", "max_ns"}`.
//! The first figure times an empty closure in the same loop: its p99 is what the machine
//! (clock reads, preemption) adds to every figure's.
//!
//! Usage: `decision_bench [iterations]` (default 20000). `DECISION_BENCH_ONLY=<text>` runs
//! only the figures whose name contains `<text>` (e.g. under callgrind or `strace -c`).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use c2c_bridge::policy::guardrail::{self, FsProbe, Node, PathContext, PermissionRequest};
use c2c_bridge::provenance::{EpochMs, Limits, Lookup, MessageInfo, PeerMark, Role, TurnIndex};

const SESSIONS: usize = 10;
const MESSAGES: usize = 10_000;

fn info(
    id: String,
    session: &str,
    role: Role,
    parent: Option<String>,
    created: EpochMs,
    completed: Option<EpochMs>,
    finish: Option<&str>,
) -> MessageInfo {
    MessageInfo {
        id,
        session_id: session.to_string(),
        role,
        parent_id: parent,
        created_ms: created,
        completed_ms: completed,
        finish: finish.map(str::to_string),
        error: false,
        summary: false,
    }
}

/// 10 sessions of 1,000 messages each: turns of one user message and four assistant steps
/// (three `tool-calls`, one `stop`); every third turn is started by a peer message, and
/// every fifth turn has a peer message folded into its running loop.
fn build_index() -> (TurnIndex, Vec<(String, String, bool)>) {
    let mut ix = TurnIndex::new(Limits::default());
    let mut targets = Vec::new();
    let per_session = MESSAGES / SESSIONS;
    for s in 0..SESSIONS {
        let sid = format!("ses_bench{s:04}");
        ix.observe_session_created(&sid, None);
        let mut t: EpochMs = 1_700_000_000_000;
        let mut n = 0usize;
        let mut turn = 0usize;
        while n + 5 <= per_session {
            let uid = format!("msg_{s:02}_{n:05}_u");
            let peer_turn = turn % 3 == 0;
            ix.observe_message(info(uid.clone(), &sid, Role::User, None, t, None, None));
            if peer_turn {
                ix.observe_peer_part(
                    &uid,
                    &sid,
                    PeerMark {
                        message_id: format!("c2c-{s}-{turn}"),
                        from: "bob".into(),
                        via: vec!["ses_bob".into()],
                    },
                );
            }
            n += 1;
            let mut parent = uid.clone();
            let mut last = String::new();
            for k in 0..4 {
                let aid = format!("msg_{s:02}_{n:05}_a{k}");
                let created = t + 10 + 100 * k as EpochMs;
                let finish = if k == 3 { "stop" } else { "tool-calls" };
                ix.observe_message(info(
                    aid.clone(),
                    &sid,
                    Role::Assistant,
                    Some(parent.clone()),
                    created,
                    Some(created + 90),
                    Some(finish),
                ));
                // A user message folded into the running loop: later steps point at it.
                if k == 1 && turn % 5 == 0 && n + 1 < per_session {
                    n += 1;
                    let fid = format!("msg_{s:02}_{n:05}_f");
                    ix.observe_message(info(
                        fid.clone(),
                        &sid,
                        Role::User,
                        None,
                        created + 50,
                        None,
                        None,
                    ));
                    parent = fid;
                }
                last = aid;
                n += 1;
            }
            targets.push((sid.clone(), last, peer_turn));
            t += 10_000;
            turn += 1;
        }
    }
    (ix, targets)
}

/// A probe that answers without system calls (every path is an existing directory, nothing
/// is a symlink): separates the guardrail's own work from its `lstat`/`readlink` calls.
struct LexicalFs;
impl FsProbe for LexicalFs {
    fn lstat(&self, _: &std::path::Path) -> Node {
        Node::Dir
    }
    fn read_link(&self, _: &std::path::Path) -> Option<PathBuf> {
        None
    }
    fn read_dir(&self, _: &std::path::Path) -> Option<Vec<(std::ffi::OsString, Node)>> {
        Some(Vec::new())
    }
}

fn stats(name: &str, mut ns: Vec<u64>) {
    ns.sort_unstable();
    let q = |p: f64| ns[((ns.len() - 1) as f64 * p).round() as usize];
    println!(
        "{{\"name\":\"{name}\",\"iterations\":{},\"min_ns\":{},\"median_ns\":{},\"p99_ns\":{},\"p999_ns\":{},\"max_ns\":{}}}",
        ns.len(),
        ns[0],
        q(0.5),
        q(0.99),
        q(0.999),
        ns[ns.len() - 1]
    );
}

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let (mut ix, targets) = build_index();
    eprintln!(
        "index: {} messages, {} sessions, {} turns",
        ix.message_count(),
        ix.session_count(),
        targets.len()
    );
    // Every walk resolves (the index holds each session's whole history).
    for (sid, tool, peer) in &targets {
        match ix.provenance(sid, tool) {
            Lookup::Resolved(p) => assert_eq!(p.is_peer_triggered(), *peer, "{tool}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    // A fixed system PATH: `npm run bench` puts `node_modules/.bin` (inside the project) first,
    // and the guardrail rightly refuses a bash command whose PATH reaches into the project.
    let ctx = PathContext::new(here.clone(), here.clone(), home)
        .with_path_env(Some("/usr/local/bin:/usr/bin:/bin".into()));
    let bash: PermissionRequest = serde_json::from_value(serde_json::json!({
        "permission": "bash",
        "command": "cd src && grep -n fn lib.rs | head -5 > ../build.log 2>&1 && ls -la",
        "patterns": ["cd src && grep -n fn lib.rs | head -5 > ../build.log 2>&1 && ls -la"],
        "args": {"command": "cd src && grep -n fn lib.rs | head -5 > ../build.log 2>&1 && ls -la"}
    }))
    .expect("request");
    let edit: PermissionRequest = serde_json::from_value(serde_json::json!({
        "permission": "edit",
        "filepath": here.join("src/lib.rs").to_string_lossy(),
        "patterns": ["src/lib.rs"],
        "args": {"filePath": here.join("src/lib.rs").to_string_lossy()}
    }))
    .expect("request");
    assert_eq!(
        guardrail::check(&bash, &ctx),
        None,
        "the bench command is approved"
    );
    assert_eq!(
        guardrail::check(&edit, &ctx),
        None,
        "the bench edit is approved"
    );

    // `DECISION_BENCH_ONLY=<text>`: run only the figures whose name contains it (for
    // `valgrind --tool=callgrind` and `strace -c` of one figure).
    let only = std::env::var("DECISION_BENCH_ONLY").ok();
    let figure = |name: &str, f: &mut dyn FnMut(usize)| {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            return;
        }
        for i in 0..iterations / 10 {
            f(i); // warm-up
        }
        let samples = (0..iterations)
            .map(|i| {
                let t = Instant::now();
                f(i);
                t.elapsed().as_nanos() as u64
            })
            .collect();
        stats(name, samples);
    };
    let n = targets.len();
    figure(
        "no-op (the loop and clock alone: what the machine adds)",
        &mut |i| {
            black_box(i);
        },
    );
    figure("provenance walk (10k-message index)", &mut |i| {
        let (s, m, _) = &targets[(i * 7919) % n];
        black_box(ix.provenance(s, m));
    });
    figure(
        "guardrail check: bash (cd, pipeline, redirection)",
        &mut |_| {
            black_box(guardrail::check(&bash, &ctx));
        },
    );
    figure("guardrail check: edit (one file)", &mut |_| {
        black_box(guardrail::check(&edit, &ctx));
    });
    figure(
        "guardrail check: bash, lexical probe (no syscalls)",
        &mut |_| {
            black_box(guardrail::check_with(&bash, &ctx, &LexicalFs));
        },
    );
    figure(
        "guardrail check: edit, lexical probe (no syscalls)",
        &mut |_| {
            black_box(guardrail::check_with(&edit, &ctx, &LexicalFs));
        },
    );
    figure("decision: walk + guardrail (bash)", &mut |i| {
        let (s, m, _) = &targets[(i * 7919) % n];
        black_box(ix.provenance(s, m));
        black_box(guardrail::check(&bash, &ctx));
    });
    figure("decision: walk + guardrail (edit)", &mut |i| {
        let (s, m, _) = &targets[(i * 7919) % n];
        black_box(ix.provenance(s, m));
        black_box(guardrail::check(&edit, &ctx));
    });

    // The machine's own tail at the decisions' length: each decision is interleaved with a CPU
    // spin as long as that decision's median (no system call, no allocation). A spin that is
    // interrupted (timer, another process, the hypervisor) runs over by the interruption, so
    // its p99 is what this host adds to any code of that length; compare it with the
    // decision's p99 of the same loop.
    for (label, request) in [("edit", &edit), ("bash", &bash)] {
        let name =
            format!("machine: a CPU spin of the {label} decision's median, interleaved with it");
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mut decide = |i: usize| {
            let (s, m, _) = &targets[(i * 7919) % n];
            black_box(ix.provenance(s, m));
            black_box(guardrail::check(request, &ctx));
        };
        let mut warm: Vec<u64> = (0..iterations / 10)
            .map(|i| {
                let t = Instant::now();
                decide(i);
                t.elapsed().as_nanos() as u64
            })
            .collect();
        warm.sort_unstable();
        let length = std::time::Duration::from_nanos(warm[warm.len() / 2]);
        let (mut decisions, mut spins) = (Vec::new(), Vec::new());
        for i in 0..iterations {
            let t = Instant::now();
            decide(i);
            decisions.push(t.elapsed().as_nanos() as u64);
            let t = Instant::now();
            while t.elapsed() < length {
                std::hint::spin_loop();
            }
            spins.push(t.elapsed().as_nanos() as u64);
        }
        stats(
            &format!("paired: decision ({label}) in the spin's loop"),
            decisions,
        );
        stats(&name, spins);
    }
}
