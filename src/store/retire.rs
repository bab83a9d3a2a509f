//! Closing the descriptors a cache let go of, off the caller's thread.
//!
//! When a cached file version is replaced, its pinned descriptor is the last reference to an
//! inode that a `rename` has already unlinked: closing it frees the inode, which costs
//! ≈ 90–160 µs on ext4 in a VM (measured with strace), inside the caller's lock. The answer
//! does not depend on it, so [`retire`] hands the descriptor to one background thread that
//! closes it. Nothing is skipped: the inode is freed a moment later. Only descriptors are
//! handed over, never memory: freeing another thread's allocations contends on the
//! allocator's locks (measured: a retired 1,000-slot parse made the next operations several
//! times slower on a loaded machine). The queue is preallocated, so handing over allocates
//! nothing either. When the thread cannot be started, the descriptor is closed here.

use std::os::fd::OwnedFd;
use std::sync::{Condvar, Mutex, OnceLock};

struct Retirer {
    queue: Mutex<Vec<OwnedFd>>,
    ready: Condvar,
}

/// Descriptors queued before the queue grows (it then allocates, which is harmless).
const QUEUE: usize = 64;

static RETIRER: OnceLock<Option<&'static Retirer>> = OnceLock::new();

fn retirer() -> Option<&'static Retirer> {
    *RETIRER.get_or_init(|| {
        let r: &'static Retirer = Box::leak(Box::new(Retirer {
            queue: Mutex::new(Vec::with_capacity(QUEUE)),
            ready: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("c2c-retire".into())
            .spawn(move || {
                let mut closing: Vec<OwnedFd> = Vec::with_capacity(QUEUE);
                loop {
                    {
                        let mut q = r.queue.lock().unwrap_or_else(|p| p.into_inner());
                        while q.is_empty() {
                            q = r.ready.wait(q).unwrap_or_else(|p| p.into_inner());
                        }
                        std::mem::swap(&mut *q, &mut closing);
                    }
                    closing.clear(); // closes them
                }
            })
            .ok()
            .map(|_| r)
    })
}

/// Close `file` on the background thread (here when that thread is unavailable).
pub(crate) fn retire(file: Option<std::fs::File>) {
    let Some(file) = file else { return };
    let Some(r) = retirer() else {
        return drop(file);
    };
    r.queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(OwnedFd::from(file));
    r.ready.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retired_descriptors_are_closed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, b"x").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let link = format!("/proc/self/fd/{fd}");
        retire(Some(f));
        // the background thread closes it; wait for that (bounded, no timing asserted)
        for _ in 0..500 {
            match std::fs::read_link(&link) {
                Err(_) => return,
                Ok(target) if target != p => return, // closed, number reused by another file
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        panic!("the retired descriptor was never closed");
    }
}
