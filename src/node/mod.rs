//! The Node-API surface: the only module that uses napi. Each export converts its
//! arguments, calls one core function and converts the result. No policy, no file access.

use napi_derive::napi;

/// The version of the native core (the crate version, e.g. `"0.1.0"`).
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
