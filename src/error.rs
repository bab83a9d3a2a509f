//! The core error type. Every variant has a stable [`ErrorCode`], which `src/node/` turns
//! into the JS `err.code` string.

use std::path::PathBuf;

/// Stable machine-readable error codes. Their string forms (`E_…`) are part of the public
/// API: JS callers and the CLI's `--json` output branch on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// An I/O failure on a broker-root file.
    Io,
}

impl ErrorCode {
    /// The stable string form, e.g. `"E_IO"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Io => "E_IO",
        }
    }
}

/// Every failure of the core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory the operation touched.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Io { .. } => ErrorCode::Io,
        }
    }
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
