//! Crash torture for the broker root (issue 12; numbers in RELIABILITY.md).
//!
//! `cargo run --release --example torture -- run [--writers 8] [--readers 3] [--ops 500]
//! [--seed 1] [--kill-ms 5..60] [--root DIR] [--python scripts/torture_lockf_writer.py]`
//!
//! Writers (send, sendAll, room posts, openPendingReply, register; plus c2c-style Python
//! `lockf` writers when `--python` is given) and readers (peek+ack, drain, gate+release) run as
//! separate processes on one root. The supervisor SIGKILLs a random worker every few
//! milliseconds and restarts it, until every worker has done its fixed number of operations.
//! Each worker journals an operation (fsync'd) only after the call returned. Afterwards the
//! invariants are checked from the files alone:
//!
//! - every message id a send returned is in exactly one place: an inbox, the held inbox, the
//!   archive or the dead letter (`lost` = in none, `duplicated` = any id found twice anywhere);
//! - every data file parses (JSON arrays whole, JSON lines line by line);
//! - no two live registrations share an alias (case-insensitively);
//! - every pending slot an `open_pending_reply` returned is in `pending_permissions.json`.
//!
//! Exit status 0 when every invariant holds; the summary is one JSON line on stdout.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use c2c_bridge::broker::{HeldSelector, SendOptions};
use c2c_bridge::policy::rate::RateConfig;
use c2c_bridge::receipts::Status;
use c2c_bridge::{Broker, OpenOptions};
use serde_json::{json, Value};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    match args.first().map(String::as_str) {
        Some("worker") => worker(
            Path::new(&get("--root").expect("--root")),
            &get("--role").expect("--role"),
            &get("--name").expect("--name"),
            get("--ops").expect("--ops").parse().unwrap(),
            get("--seed").map(|s| s.parse().unwrap()).unwrap_or(1),
        ),
        Some("run") => std::process::exit(run(&args, get)),
        Some("check") => {
            let root = PathBuf::from(get("--root").expect("--root"));
            let report = check(&root);
            println!("{report}");
            std::process::exit(if report["ok"] == true { 0 } else { 1 });
        }
        _ => {
            eprintln!("usage: torture run [--writers N] [--readers M] [--ops K] [--seed S] [--root DIR] [--python FILE] | check --root DIR");
            std::process::exit(2);
        }
    }
}

fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    if s == 0 {
        s = 0x9e37_79b9_7f4a_7c15;
    }
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

const WRITER_ROLES: [&str; 5] = ["send", "sendall", "room", "pending", "register"];
const READER_ROLES: [&str; 3] = ["peekack", "drain", "gate"];

struct Worker {
    name: String,
    role: String,
    cmd: Vec<String>,
    child: Option<Child>,
    done: bool,
    starts: u32,
}

fn run(args: &[String], get: impl Fn(&str) -> Option<String>) -> i32 {
    let _ = args;
    let writers: usize = get("--writers").map(|s| s.parse().unwrap()).unwrap_or(8);
    let readers: usize = get("--readers").map(|s| s.parse().unwrap()).unwrap_or(3);
    let ops: u64 = get("--ops").map(|s| s.parse().unwrap()).unwrap_or(500);
    let seed: u64 = get("--seed").map(|s| s.parse().unwrap()).unwrap_or(1);
    let (kmin, kmax): (u64, u64) = get("--kill-ms")
        .and_then(|s| {
            let (a, b) = s.split_once("..")?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((5, 60));
    let python = get("--python");
    // The real interpreter, not a shell shim (a SIGKILLed shim can leave its child behind).
    let python_exe = python.as_ref().map(|_| {
        Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "python3".into())
    });
    let tmp;
    let root = match get("--root") {
        Some(r) => PathBuf::from(r),
        None => {
            tmp = std::env::temp_dir().join(format!("c2c-torture-{}", std::process::id()));
            tmp.clone()
        }
    };
    std::fs::create_dir_all(root.join("journal")).unwrap();
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut workers: Vec<Worker> = Vec::new();
    let mut add = |name: String, role: &str, cmd: Vec<String>| {
        workers.push(Worker {
            name,
            role: role.to_string(),
            cmd,
            child: None,
            done: false,
            starts: 0,
        })
    };
    let own = |name: &str, role: &str, i: u64| {
        vec![
            exe.display().to_string(),
            "worker".into(),
            "--root".into(),
            root.display().to_string(),
            "--role".into(),
            role.into(),
            "--name".into(),
            name.into(),
            "--ops".into(),
            ops.to_string(),
            "--seed".into(),
            (seed * 1000 + i).to_string(),
        ]
    };
    for j in 0..readers {
        let role = READER_ROLES[j % READER_ROLES.len()];
        let name = format!("r{j}");
        add(name.clone(), role, own(&name, role, j as u64));
    }
    for i in 0..writers {
        let role = WRITER_ROLES[i % WRITER_ROLES.len()];
        let name = format!("w{i}");
        add(name.clone(), role, own(&name, role, 100 + i as u64));
    }
    if let Some(py) = &python {
        for k in 0..2 {
            let name = format!("py{k}");
            add(
                name.clone(),
                "python-lockf",
                vec![
                    python_exe.clone().unwrap_or_default(),
                    py.clone(),
                    root.display().to_string(),
                    name,
                    ops.to_string(),
                    readers.to_string(),
                ],
            );
        }
    }
    let mut rng = xorshift(seed);
    let mut kills = 0u64;
    let started = Instant::now();
    let spawn = |w: &mut Worker| {
        w.starts += 1;
        w.child = Some(
            Command::new(&w.cmd[0])
                .args(&w.cmd[1..])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn worker"),
        );
    };
    for w in workers.iter_mut() {
        spawn(w);
    }
    let mut failures: Vec<String> = Vec::new();
    loop {
        // Reap finished workers; a worker that exits 0 is done, anything else restarts.
        for w in workers.iter_mut() {
            if let Some(c) = w.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    w.child = None;
                    if st.success() {
                        w.done = true;
                    } else if st.code().is_some() {
                        // Exited with an error by itself (not killed): restart, but note it.
                        failures.push(format!("{} exited {st}", w.name));
                        spawn(w);
                    } else {
                        spawn(w);
                    }
                }
            }
        }
        if workers.iter().all(|w| w.done) {
            break;
        }
        if failures.len() > 200 {
            break;
        }
        let live: Vec<usize> = (0..workers.len())
            .filter(|&i| workers[i].child.is_some())
            .collect();
        // Each worker is killed about as often however many are left, so the last ones
        // still get to finish (a Python start alone takes tens of milliseconds).
        let scale = workers.len() as u64 / live.len().max(1) as u64;
        std::thread::sleep(Duration::from_millis(
            (kmin + rng() % (kmax - kmin + 1)) * scale.max(1),
        ));
        if live.is_empty() {
            continue;
        }
        let w = &mut workers[live[(rng() % live.len() as u64) as usize]];
        if let Some(mut c) = w.child.take() {
            let _ = c.kill(); // SIGKILL
            let exited_before = matches!(c.wait(), Ok(st) if st.success());
            if exited_before {
                w.done = true;
            } else {
                kills += 1;
                spawn(w);
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let mut report = check(&root);
    let o = report.as_object_mut().unwrap();
    o.insert("kills".into(), json!(kills));
    o.insert("seconds".into(), json!((secs * 10.0).round() / 10.0));
    o.insert(
        "workers".into(),
        json!(workers
            .iter()
            .map(|w| format!("{}:{}", w.name, w.role))
            .collect::<Vec<_>>()),
    );
    o.insert(
        "starts".into(),
        json!(workers.iter().map(|w| w.starts).sum::<u32>()),
    );
    o.insert("worker_errors".into(), json!(failures));
    if !failures.is_empty() {
        o.insert("ok".into(), json!(false));
    }
    println!("{report}");
    i32::from(report["ok"] != true)
}

/// Append one journal line and fsync it (after the operation returned).
fn journal(file: &mut std::fs::File, v: Value) {
    let mut line = v.to_string();
    line.push('\n');
    file.write_all(line.as_bytes()).unwrap();
    file.sync_data().unwrap();
}

fn open_broker(
    root: &Path,
    sid: &str,
    alias: &str,
    inbound: &str,
) -> c2c_bridge::error::Result<Broker> {
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.parent().unwrap().to_path_buf()),
        inbound: Some(inbound.into()),
        lock_timeout: Some(Duration::from_secs(30)),
        rate: Some(RateConfig {
            burst: 1_000_000,
            window_s: 1.0,
            max_pairs: 4096,
        }),
        held_cap: Some(1_000_000),
        pending_per_alias_cap: Some(1_000_000),
        pending_global_cap: Some(1_000_000),
        env: c2c_bridge::Environment::from_pairs([("C2C_PERMISSION_TTL", "86400")]),
        ..Default::default()
    })
}

fn worker(root: &Path, role: &str, name: &str, ops: u64, seed: u64) {
    let jpath = root.join("journal").join(format!("{name}.jsonl"));
    let done = std::fs::read_to_string(&jpath)
        .map(|t| t.lines().filter(|l| l.ends_with('}')).count() as u64)
        .unwrap_or(0);
    let mut jf = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&jpath)
        .unwrap();
    let mut rng = xorshift(seed ^ (std::process::id() as u64) << 20);
    let inbound = if role == "gate" { "hold" } else { "accept" };
    // Registration: a killed predecessor's record is dead, so the same session id may return.
    let b = loop {
        let alias = if role == "register" {
            format!("pool{}", rng() % 3)
        } else {
            name.to_string()
        };
        match open_broker(root, &format!("ses_{name}"), &alias, inbound) {
            Ok(b) => break b,
            Err(e) if role == "register" => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                eprintln!("{name}: open: {e}");
                std::process::exit(3);
            }
        }
    };
    if matches!(role, "room") || role == "peekack" || role == "drain" || role == "gate" {
        b.join_room("lobby").unwrap();
    }
    let readers: Vec<String> = (0..3).map(|j| format!("r{j}")).collect();
    let opts = SendOptions::default();
    for n in done..ops {
        let content = format!("{name} op {n}");
        let line = match role {
            "send" => {
                let to = &readers[(rng() % readers.len() as u64) as usize];
                match b.send(to, &content, &opts) {
                    Ok(r) => json!({"op": n, "sent": [r.message_id]}),
                    Err(e) => json!({"op": n, "error": e.code().as_str()}),
                }
            }
            "sendall" => match b.send_all(&content, &opts) {
                Ok(r) => {
                    json!({"op": n, "sent": r.sent.iter().map(|r| r.message_id.clone()).collect::<Vec<_>>()})
                }
                Err(e) => json!({"op": n, "error": e.code().as_str()}),
            },
            "room" => match b.send_room("lobby", &content, &opts) {
                Ok(r) => {
                    json!({"op": n, "sent": r.sent.iter().map(|r| r.message_id.clone()).collect::<Vec<_>>()})
                }
                Err(e) => json!({"op": n, "error": e.code().as_str()}),
            },
            "pending" => {
                let perm = format!("perm-{name}-{n}");
                match b.open_pending_reply(&perm, "permission", &["r0".to_string()]) {
                    Ok(_) => json!({"op": n, "slot": perm}),
                    Err(e) => json!({"op": n, "error": e.code().as_str()}),
                }
            }
            "register" => {
                let alias = format!("pool{}", rng() % 3);
                match open_broker(root, &format!("ses_{name}"), &alias, "accept") {
                    Ok(_) => json!({"op": n, "registered": alias}),
                    Err(e) => json!({"op": n, "error": e.code().as_str()}),
                }
            }
            "peekack" => match b.peek() {
                Ok(ms) => {
                    let ids: Vec<String> = ms.iter().map(|m| m.message_id.clone()).collect();
                    match b.ack(&ids) {
                        Ok(a) => json!({"op": n, "acked": a.acked.len()}),
                        Err(e) => json!({"op": n, "error": e.code().as_str()}),
                    }
                }
                Err(e) => json!({"op": n, "error": e.code().as_str()}),
            },
            "drain" => match b.drain() {
                Ok(ms) => json!({"op": n, "drained": ms.len()}),
                Err(e) => json!({"op": n, "error": e.code().as_str()}),
            },
            "gate" => {
                let res = b.gate_inbox().and_then(|g| {
                    let released = if rng() % 2 == 0 {
                        b.release_held(HeldSelector::All).unwrap_or_default().len()
                    } else {
                        0
                    };
                    let ids: Vec<String> = g.deliver.iter().map(|m| m.message_id.clone()).collect();
                    b.acknowledge(&ids, Status::Delivered)
                        .map(|a| (a.len(), released))
                });
                match res {
                    Ok((a, r)) => json!({"op": n, "delivered": a, "released": r}),
                    Err(e) => json!({"op": n, "error": e.code().as_str()}),
                }
            }
            other => panic!("unknown role {other}"),
        };
        journal(&mut jf, line);
    }
}

/// Check the invariants from the files alone (see the module doc).
fn check(root: &Path) -> Value {
    let mut unparsable: Vec<String> = Vec::new();
    let mut where_found: HashMap<String, Vec<String>> = HashMap::new();
    let mut note =
        |id: &str, place: String| where_found.entry(id.to_string()).or_default().push(place);
    let read_array = |p: &Path, bad: &mut Vec<String>| -> Vec<Value> {
        match std::fs::read(p)
            .ok()
            .map(|b| serde_json::from_slice::<Value>(&b))
        {
            Some(Ok(Value::Array(a))) => a,
            Some(_) => {
                bad.push(p.display().to_string());
                Vec::new()
            }
            None => Vec::new(),
        }
    };
    let read_lines = |p: &Path, bad: &mut Vec<String>| -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(p) else {
            return Vec::new();
        };
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| match serde_json::from_str(l) {
                Ok(v) => Some(v),
                Err(_) => {
                    bad.push(format!("{}: {:?}", p.display(), &l[..l.len().min(60)]));
                    None
                }
            })
            .collect()
    };
    let mut tmp_left = 0;
    let mut files = 0;
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        if name.contains(".tmp.") {
            tmp_left += 1;
        } else if name.ends_with(".inbox.json") {
            files += 1;
            for v in read_array(&p, &mut unparsable) {
                if let Some(id) = v.get("message_id").and_then(Value::as_str) {
                    note(id, format!("inbox:{name}"));
                }
            }
        } else if name.ends_with(".json") {
            files += 1;
            read_array(&p, &mut unparsable);
        } else if name.contains(".corrupt.") {
            unparsable.push(format!("{name} (a file was found corrupt)"));
        } else if name.ends_with(".jsonl") || name == "broker.log" {
            files += 1;
            for v in read_lines(&p, &mut unparsable) {
                if name == "dead-letter.jsonl" {
                    if let Some(id) = v.get("message_id").and_then(Value::as_str) {
                        note(id, "dead-letter".into());
                    }
                }
            }
        }
    }
    for sub in ["archive", "held", "receipts", "rooms/lobby"] {
        let Ok(rd) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let p = e.path();
            if name.contains(".tmp.") {
                tmp_left += 1;
            } else if name == "meta.json" {
                files += 1;
                if serde_json::from_slice::<Value>(&std::fs::read(&p).unwrap_or_default()).is_err()
                {
                    unparsable.push(p.display().to_string());
                }
            } else if name.ends_with(".json") {
                files += 1;
                for v in read_array(&p, &mut unparsable) {
                    if sub == "held" {
                        if let Some(id) = v.get("message_id").and_then(Value::as_str) {
                            note(id, format!("held:{name}"));
                        }
                    }
                }
            } else if name.ends_with(".jsonl") {
                files += 1;
                for v in read_lines(&p, &mut unparsable) {
                    if sub == "archive" {
                        if let Some(id) = v.get("message_id").and_then(Value::as_str) {
                            note(id, format!("archive:{name}"));
                        }
                    }
                }
            }
        }
    }
    // What the workers were told was sent, and which slots were opened.
    let mut sent: HashSet<String> = HashSet::new();
    let mut slots: HashSet<String> = HashSet::new();
    let mut ops = 0u64;
    let mut errors: HashMap<String, u64> = HashMap::new();
    if let Ok(rd) = std::fs::read_dir(root.join("journal")) {
        for e in rd.flatten() {
            for v in read_lines(&e.path(), &mut Vec::new()) {
                ops += 1;
                if let Some(ids) = v.get("sent").and_then(Value::as_array) {
                    sent.extend(ids.iter().filter_map(|i| i.as_str().map(str::to_string)));
                }
                if let Some(s) = v.get("slot").and_then(Value::as_str) {
                    slots.insert(s.to_string());
                }
                if let Some(c) = v.get("error").and_then(Value::as_str) {
                    *errors.entry(c.to_string()).or_default() += 1;
                }
            }
        }
    }
    let lost: Vec<&String> = sent
        .iter()
        .filter(|id| !where_found.contains_key(*id))
        .collect();
    let duplicated: Vec<(&String, &Vec<String>)> =
        where_found.iter().filter(|(_, w)| w.len() > 1).collect();
    let pending = read_array(&root.join("pending_permissions.json"), &mut Vec::new());
    let have_slots: HashSet<&str> = pending
        .iter()
        .filter_map(|v| v.get("perm_id").and_then(Value::as_str))
        .collect();
    let lost_slots = slots
        .iter()
        .filter(|s| !have_slots.contains(s.as_str()))
        .count();
    let regs = read_array(&root.join("registry.json"), &mut Vec::new());
    let mut live_alias: HashMap<String, u32> = HashMap::new();
    for r in c2c_bridge::registry::parse_all(&regs) {
        if r.is_alive() {
            *live_alias.entry(r.alias.to_ascii_lowercase()).or_default() += 1;
        }
    }
    let dup_alias: Vec<&String> = live_alias
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(a, _)| a)
        .collect();
    let ok = lost.is_empty()
        && duplicated.is_empty()
        && unparsable.is_empty()
        && lost_slots == 0
        && dup_alias.is_empty();
    json!({
        "ok": ok,
        "ops_journaled": ops,
        "sends_returned": sent.len(),
        "messages_found": where_found.len(),
        "lost": lost.len(),
        "duplicated": duplicated.len(),
        "duplicated_examples": duplicated.iter().take(5).map(|(id, w)| json!({"id": id, "in": w})).collect::<Vec<_>>(),
        "lost_examples": lost.iter().take(5).collect::<Vec<_>>(),
        "files_checked": files,
        "unparsable": unparsable,
        "tmp_files_left": tmp_left,
        "slots_opened": slots.len(),
        "slots_lost": lost_slots,
        "duplicate_live_aliases": dup_alias,
        "errors": errors,
    })
}
