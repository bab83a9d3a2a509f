//! Giving the process's freed native heap back to the system.
//!
//! Opening a handle registers its session: the registry (one record per session of the root)
//! is read, parsed and rewritten, a few MiB of short-lived allocations at 1,000 registrations.
//! They are freed before the open returns, but glibc's malloc keeps freed memory resident
//! unless it is at the top of the heap: between the handles' long-lived allocations it stays
//! in the process. Measured in `opencode serve` with 1,000 sessions registered
//! (`npm run bench:memory`, after a full GC): glibc's main heap held 15.5 MiB more than the
//! server without the plugin; with the free pages returned after each registration, ≈ 5 MiB.
//!
//! [`release_free_memory`] asks glibc (`malloc_trim(0)`) to return every whole free page of
//! its arenas to the kernel (`MADV_DONTNEED`); nothing allocated is touched. Other C libraries
//! (musl) and other systems: nothing is done.

/// Return the freed pages of the native heap to the system (glibc `malloc_trim(0)`); a no-op
/// where the C library is not glibc. Thread-safe (glibc locks each arena); its cost grows with
/// the heap's free space (tens of µs for a few MiB). Called after a registration.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    trim();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(
    unsafe_code,
    reason = "malloc_trim is a C function; nix has no wrapper for it"
)]
fn trim() {
    // SAFETY: malloc_trim takes a plain size_t, touches only glibc's own arenas (under their
    // locks) and returns an int we do not need; it is safe to call from any thread at any time.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Resident anonymous memory of this process, KiB (`RssAnon` of /proc/self/status).
    fn rss_anon_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        let line = status
            .lines()
            .find(|l| l.starts_with("RssAnon:"))
            .expect("RssAnon line");
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// 64 MiB freed between small live allocations stays resident under glibc until released;
    /// releasing returns most of it and leaves every live allocation intact.
    #[test]
    fn release_returns_freed_pages_and_keeps_live_ones() {
        let mut keep: Vec<Box<[u8; 32]>> = Vec::new();
        let mut churn: Vec<Vec<u8>> = Vec::new();
        for i in 0..4096 {
            // 16 KiB: below glibc's mmap threshold, so it comes from the heap, between keepers.
            churn.push(vec![1u8; 16 * 1024]);
            keep.push(Box::new([i as u8; 32]));
        }
        drop(churn);
        let before = rss_anon_kib();
        super::release_free_memory();
        let after = rss_anon_kib();
        assert!(
            before.saturating_sub(after) >= 32 * 1024,
            "RssAnon {before} KiB → {after} KiB: less than 32 MiB of the 64 MiB freed was returned"
        );
        for (i, k) in keep.iter().enumerate() {
            assert!(k.iter().all(|&b| b == i as u8));
        }
    }
}
