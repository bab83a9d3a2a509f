//! The one place where core errors become JS errors.
//!
//! JS sees an `Error` whose `code` is the core's stable string (`E_ALIAS_TAKEN`, …) and whose
//! message says what to do. The strings come from [`ErrorCode::as_str`], whose match (like
//! [`Error::code`]) has no catch-all arm: a new core variant fails to compile until mapped.

use crate::{Error, ErrorCode};

/// A JS error code: the core's codes plus `E_INVALID_ARG` for malformed JS arguments and
/// napi's own statuses.
#[derive(Debug, Clone)]
pub enum JsCode {
    /// A core error code.
    Core(ErrorCode),
    /// `E_INVALID_ARG`: a JS argument could not be converted.
    InvalidArg,
    /// A napi status (from napi-rs internals).
    Napi(napi::Status),
}

impl AsRef<str> for JsCode {
    fn as_ref(&self) -> &str {
        match self {
            JsCode::Core(code) => code.as_str(),
            JsCode::InvalidArg => "E_INVALID_ARG",
            // napi-rs reports a JS argument of the wrong type (a number where a string was
            // expected, a missing argument, ...) with its own status; to JS that is a bad argument.
            JsCode::Napi(_) => "E_INVALID_ARG",
        }
    }
}

impl From<napi::Status> for JsCode {
    fn from(s: napi::Status) -> JsCode {
        JsCode::Napi(s)
    }
}

/// Convert a core error.
pub fn to_js(e: Error) -> napi::Error<JsCode> {
    napi::Error::new(JsCode::Core(e.code()), e.to_string())
}

/// An `E_INVALID_ARG` error.
pub fn invalid_arg(msg: impl ToString) -> napi::Error<JsCode> {
    napi::Error::new(JsCode::InvalidArg, msg)
}
