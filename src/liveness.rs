//! Is a registered process still the one that registered?
//!
//! c2c's rule: a registration with a pid is alive when `/proc/<pid>` exists and its start
//! time — field 22 of `/proc/<pid>/stat`, in clock ticks since boot — equals the recorded
//! `pid_start_time`. That defeats pid reuse. A registration without a pid counts as alive.

use std::path::Path;

/// The start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`), or
/// `None` when the process does not exist or the file cannot be parsed.
pub fn pid_start_time(pid: u32) -> Option<u64> {
    pid_start_time_in(Path::new("/proc"), pid)
}

fn pid_start_time_in(proc_root: &Path, pid: u32) -> Option<u64> {
    use std::io::Read;
    let path = proc_root.join(pid.to_string()).join("stat");
    let mut file = std::fs::File::open(&path).ok()?;
    // The line is a few hundred bytes: one `read` into a stack buffer. procfs hands out the
    // whole line in one read when the buffer can hold it; a longer or short-read line falls
    // back to reading the rest.
    let mut buf = [0u8; 1024];
    let mut n = 0;
    loop {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                if buf[n - 1] == b'\n' {
                    break; // the whole line: no second read for EOF
                }
                if n == buf.len() {
                    let mut rest = buf.to_vec();
                    file.read_to_end(&mut rest).ok()?;
                    return parse_start_time(std::str::from_utf8(&rest).ok()?);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    parse_start_time(std::str::from_utf8(&buf[..n]).ok()?)
}

/// Parse field 22 out of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself contain spaces and `)`, so fields are counted from the last `)`.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // after ')' comes field 3 (state); field 22 is the 20th field from there.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// c2c's liveness rule for one registration.
pub fn is_alive(pid: Option<u32>, recorded_start: Option<u64>) -> bool {
    match pid {
        None => true,
        Some(pid) => match pid_start_time(pid) {
            None => false,
            Some(actual) => recorded_start.is_none_or(|r| r == actual),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_field_22_even_with_parens_in_comm() {
        let line =
            "1234 (we ird) name)) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20";
        assert_eq!(parse_start_time(line), Some(987654));
        assert_eq!(parse_start_time("garbage"), None);
    }

    #[test]
    fn own_process_is_alive_and_pid_reuse_is_detected() {
        let me = std::process::id();
        let start = pid_start_time(me).expect("own /proc entry");
        assert!(is_alive(Some(me), Some(start)));
        assert!(is_alive(Some(me), None));
        assert!(!is_alive(Some(me), Some(start + 1)), "a reused pid is dead");
        assert!(is_alive(None, None), "no pid counts as alive (c2c)");
    }

    #[test]
    fn exited_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = pid_start_time(pid);
        child.wait().unwrap();
        assert!(!is_alive(Some(pid), start));
    }
}
