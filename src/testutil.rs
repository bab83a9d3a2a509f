//! Helpers shared by unit tests (compiled only for tests).

/// A deterministic xorshift64* generator: property-style tests need varied input without a
/// dependency, and the same input on every run.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A temporary directory with mode 0700, usable as a broker root (roots readable or writable
/// by others are refused).
pub(crate) fn private_tempdir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    d
}
