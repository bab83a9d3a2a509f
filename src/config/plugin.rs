//! The plugin's options object (`"plugin": [["c2c-bridge", {...}]]`) and its environment
//! overrides: one schema table ([`SCHEMA`]), one validation ([`validate`]), every mistake an
//! [`OptionError`] with a stable code (see "Failing safe" in [`crate::config`]).

use std::collections::HashMap;

use serde_json::Value;

/// Default of the plugin's `fallbackIntervalMs`: the delivery check when `session.idle`
/// never comes, milliseconds.
pub const DEFAULT_FALLBACK_INTERVAL_MS: u64 = 2_000;
/// Default of the plugin's `retryBaseMs`: the first retry delay after a failed injection,
/// milliseconds (doubling up to 30 s).
pub const DEFAULT_RETRY_BASE_MS: u64 = 500;

/// The JSON shape and the rule of one option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A c2c alias (1–64 chars of `[A-Za-z0-9._-]`, no leading dot, not reserved).
    Alias,
    /// A directory path: absolute, or starting with `~/` (expanded with `HOME`).
    Path,
    /// A JSON array of aliases; in the environment a comma-separated list.
    AliasList,
    /// One of the listed words (ASCII case and surrounding blanks ignored, as the gate does).
    Enum(&'static [&'static str]),
    /// A whole number from `min` to `max` inclusive; in the environment decimal digits only
    /// (`"16k"` is an error, never 16384).
    Int {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
}

/// One option of the schema.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// The key in the options object, e.g. `peerPermissions`.
    pub name: &'static str,
    /// The environment variable that overrides it (wins when set and not empty).
    pub env: Option<&'static str>,
    /// Its shape and range.
    pub rule: Rule,
    /// The unit of a number (`bytes`, `seconds`, …), empty otherwise.
    pub unit: &'static str,
    /// Whether a mistake in it turns auto-answers off.
    pub touches_permissions: bool,
}

/// Every option the plugin reads (defaults and `Broker.open` ranges: the module table).
pub const SCHEMA: &[OptionSpec] = &[
    OptionSpec {
        name: "alias",
        env: Some(super::vars::ALIAS),
        rule: Rule::Alias,
        unit: "",
        touches_permissions: false,
    },
    OptionSpec {
        name: "brokerRoot",
        env: Some(super::vars::BROKER_ROOT),
        rule: Rule::Path,
        unit: "",
        touches_permissions: false,
    },
    OptionSpec {
        name: "peerPermissions",
        env: Some(super::vars::PEER_PERMISSIONS),
        rule: Rule::Enum(crate::policy::peer_permissions::VALID),
        unit: "",
        touches_permissions: true,
    },
    OptionSpec {
        name: "supervisors",
        env: Some(super::vars::SUPERVISORS),
        rule: Rule::AliasList,
        unit: "",
        touches_permissions: true,
    },
    OptionSpec {
        name: "inbound",
        env: Some(super::vars::INBOUND),
        rule: Rule::Enum(crate::policy::inbound::VALID),
        unit: "",
        touches_permissions: false,
    },
    OptionSpec {
        name: "maxMessageBytes",
        env: Some(super::vars::MAX_MESSAGE_BYTES),
        rule: Rule::Int {
            min: 1,
            max: 1024 * 1024,
        },
        unit: "bytes",
        touches_permissions: false,
    },
    OptionSpec {
        name: "heldCap",
        env: None,
        rule: Rule::Int {
            min: 1,
            max: 10_000,
        },
        unit: "messages",
        touches_permissions: false,
    },
    OptionSpec {
        name: "heldTtlSecs",
        env: None,
        rule: Rule::Int {
            min: 1,
            max: 86_400,
        },
        unit: "seconds",
        touches_permissions: false,
    },
    OptionSpec {
        name: "rateBurst",
        env: None,
        rule: Rule::Int {
            min: 1,
            max: 10_000,
        },
        unit: "messages",
        touches_permissions: false,
    },
    OptionSpec {
        name: "rateWindowSecs",
        env: None,
        rule: Rule::Int {
            min: 1,
            max: 86_400,
        },
        unit: "seconds",
        touches_permissions: false,
    },
    OptionSpec {
        name: "fallbackIntervalMs",
        env: None,
        rule: Rule::Int {
            min: 100,
            max: 600_000,
        },
        unit: "milliseconds",
        touches_permissions: false,
    },
    OptionSpec {
        name: "retryBaseMs",
        env: None,
        rule: Rule::Int {
            min: 10,
            max: 60_000,
        },
        unit: "milliseconds",
        touches_permissions: false,
    },
];

/// Stable codes of [`OptionError`].
pub mod codes {
    /// A key that is no option (`suggestion` names the nearest one).
    pub const UNKNOWN: &str = "E_UNKNOWN_OPTION";
    /// A value of the wrong JSON type (`false` for a word, `"16k"` for a number).
    pub const TYPE: &str = "E_OPTION_TYPE";
    /// A number outside its range.
    pub const RANGE: &str = "E_OPTION_RANGE";
    /// A value outside the vocabulary or syntax (an unknown mode, a bad alias, a relative path).
    pub const VALUE: &str = "E_OPTION_VALUE";
}

/// One mistake in the options or the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    /// One of [`codes`].
    pub code: &'static str,
    /// The key as written, or the environment variable's name.
    pub option: String,
    /// What is wrong, in one sentence naming the expected shape.
    pub message: String,
    /// For an unknown key: the option probably meant.
    pub suggestion: Option<String>,
}

/// The options after validation: only values that passed, environment overrides applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginOptions {
    /// `alias` / `C2C_BRIDGE_ALIAS`.
    pub alias: Option<String>,
    /// `brokerRoot` / `C2C_MCP_BROKER_ROOT`, `~/` expanded.
    pub broker_root: Option<String>,
    /// `peerPermissions` / `C2C_BRIDGE_PEER_PERMISSIONS`, lower case.
    pub peer_permissions: Option<String>,
    /// `supervisors` / `C2C_SUPERVISORS`.
    pub supervisors: Vec<String>,
    /// `inbound` / `C2C_BRIDGE_INBOUND`, lower case (`hold` when the given value was wrong).
    pub inbound: Option<String>,
    /// `maxMessageBytes` / `C2C_BRIDGE_MAX_MESSAGE_BYTES`, bytes.
    pub max_message_bytes: Option<u64>,
    /// `heldCap`, messages.
    pub held_cap: Option<u64>,
    /// `heldTtlSecs`, seconds.
    pub held_ttl_secs: Option<u64>,
    /// `rateBurst`, messages.
    pub rate_burst: Option<u64>,
    /// `rateWindowSecs`, seconds.
    pub rate_window_secs: Option<u64>,
    /// `fallbackIntervalMs`, milliseconds.
    pub fallback_interval_ms: Option<u64>,
    /// `retryBaseMs`, milliseconds.
    pub retry_base_ms: Option<u64>,
}

impl PluginOptions {
    /// `fallbackIntervalMs`, or its default [`DEFAULT_FALLBACK_INTERVAL_MS`]; milliseconds.
    pub fn fallback_interval_ms_or_default(&self) -> u64 {
        self.fallback_interval_ms
            .unwrap_or(DEFAULT_FALLBACK_INTERVAL_MS)
    }

    /// `retryBaseMs`, or its default [`DEFAULT_RETRY_BASE_MS`]; milliseconds.
    pub fn retry_base_ms_or_default(&self) -> u64 {
        self.retry_base_ms.unwrap_or(DEFAULT_RETRY_BASE_MS)
    }
}

/// The answer of [`validate`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validated {
    /// The usable values.
    pub options: PluginOptions,
    /// Every mistake, in schema order for known keys, then unknown keys in the order written.
    pub errors: Vec<OptionError>,
    /// Whether permission requests must all go to OpenCode's prompt (see the module doc).
    pub auto_answers_off: bool,
    /// The options whose value came from their environment variable (e.g. `brokerRoot`
    /// from `C2C_MCP_BROKER_ROOT`), in schema order.
    pub from_env: Vec<&'static str>,
}

/// A checked value.
enum Checked {
    Str(String),
    List(Vec<String>),
    Int(u64),
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

fn expected(rule: Rule, unit: &str) -> String {
    match rule {
        Rule::Alias => "an alias (1–64 of A-Z a-z 0-9 . _ -)".into(),
        Rule::Path => "an absolute directory path (or one starting with ~/)".into(),
        Rule::AliasList => "an array of aliases".into(),
        Rule::Enum(words) => format!("one of {}", words.join(", ")),
        Rule::Int { min, max } => format!("a whole number of {unit} from {min} to {max}"),
    }
}

/// Check one value (`from_env`: the environment's string form).
fn check(
    spec: &OptionSpec,
    label: &str,
    v: &Value,
    from_env: bool,
    home: Option<&str>,
) -> Result<Checked, OptionError> {
    let err = |code: &'static str, message: String| OptionError {
        code,
        option: label.to_string(),
        message,
        suggestion: None,
    };
    let want = expected(spec.rule, spec.unit);
    let wrong_type = || {
        err(
            codes::TYPE,
            format!(
                "{label} is {} ({}); expected {want}",
                type_name(v),
                shown(v)
            ),
        )
    };
    match spec.rule {
        Rule::Alias | Rule::Path | Rule::Enum(_) => {
            let Value::String(s) = v else {
                return Err(wrong_type());
            };
            let s = s.trim();
            match spec.rule {
                Rule::Alias => crate::ids::validate_alias(s)
                    .map(|()| Checked::Str(s.to_string()))
                    .map_err(|e| err(codes::VALUE, format!("{label}: {e}"))),
                Rule::Path => {
                    let expanded = match (s.strip_prefix("~/"), home) {
                        (Some(rest), Some(h)) => format!("{}/{rest}", h.trim_end_matches('/')),
                        _ => s.to_string(),
                    };
                    if expanded.starts_with('/') {
                        Ok(Checked::Str(expanded))
                    } else {
                        Err(err(
                            codes::VALUE,
                            format!("{label} {s:?} is not {want}: a relative path would depend on where OpenCode was started"),
                        ))
                    }
                }
                Rule::Enum(words) => words
                    .iter()
                    .find(|w| w.eq_ignore_ascii_case(s))
                    .map(|w| Checked::Str(w.to_string()))
                    .ok_or_else(|| err(codes::VALUE, format!("{label} is {s:?}; expected {want}"))),
                _ => unreachable!("string rules only"),
            }
        }
        Rule::AliasList => {
            let items: Vec<String> = match v {
                Value::String(s) if from_env => s
                    .split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect(),
                Value::Array(a) => {
                    let mut out = Vec::new();
                    for item in a {
                        let Value::String(s) = item else {
                            return Err(err(
                                codes::TYPE,
                                format!(
                                    "{label} holds {} ({}); expected {want}",
                                    type_name(item),
                                    shown(item)
                                ),
                            ));
                        };
                        out.push(s.trim().to_string());
                    }
                    out
                }
                _ => return Err(wrong_type()),
            };
            for a in &items {
                crate::ids::validate_alias(a)
                    .map_err(|e| err(codes::VALUE, format!("{label}: {e}")))?;
            }
            Ok(Checked::List(items))
        }
        Rule::Int { min, max } => {
            let n = match v {
                Value::Number(n) => match n.as_u64() {
                    Some(n) => n,
                    None => {
                        return Err(err(
                            if n.as_f64().is_some_and(|f| f < 0.0) {
                                codes::RANGE
                            } else {
                                codes::TYPE
                            },
                            format!("{label} is {n}; expected {want}"),
                        ))
                    }
                },
                Value::String(s)
                    if from_env && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    s.parse::<u64>().unwrap_or(u64::MAX)
                }
                _ => return Err(wrong_type()),
            };
            if n < min || n > max {
                return Err(err(
                    codes::RANGE,
                    format!("{label} is {n}; expected {want}"),
                ));
            }
            Ok(Checked::Int(n))
        }
    }
}

/// Levenshtein distance over chars, ASCII case ignored.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The option an unknown key most likely meant: the nearest name within a third of its
/// length (at least 2 edits), ties to the first in the schema.
pub fn suggest(key: &str) -> Option<&'static str> {
    let limit = (key.chars().count() / 3).max(2);
    SCHEMA
        .iter()
        .map(|s| (distance(key, s.name), s.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn store(out: &mut PluginOptions, name: &str, value: Checked) {
    let s = |c: Checked| match c {
        Checked::Str(s) => Some(s),
        _ => None,
    };
    let n = |c: Checked| match c {
        Checked::Int(n) => Some(n),
        _ => None,
    };
    match name {
        "alias" => out.alias = s(value),
        "brokerRoot" => out.broker_root = s(value),
        "peerPermissions" => out.peer_permissions = s(value),
        "supervisors" => {
            if let Checked::List(l) = value {
                out.supervisors = l;
            }
        }
        "inbound" => out.inbound = s(value),
        "maxMessageBytes" => out.max_message_bytes = n(value),
        "heldCap" => out.held_cap = n(value),
        "heldTtlSecs" => out.held_ttl_secs = n(value),
        "rateBurst" => out.rate_burst = n(value),
        "rateWindowSecs" => out.rate_window_secs = n(value),
        "fallbackIntervalMs" => out.fallback_interval_ms = n(value),
        "retryBaseMs" => out.retry_base_ms = n(value),
        _ => {}
    }
}

/// Validate the options object `raw` (`null` counts as `{}`) and the environment `env`.
///
/// For each option the environment variable wins when set and not blank; both are checked
/// when present, so a bad option is reported even under a good override. A `null` option
/// value counts as unset. A wrong `inbound` is replaced by `hold` (peer messages kept for
/// the user to review) rather than by the permissive default `accept`.
pub fn validate(raw: &Value, env: &HashMap<String, String>) -> Validated {
    let mut out = Validated::default();
    let home = env.get(super::vars::HOME).map(String::as_str);
    let empty = serde_json::Map::new();
    let obj = match raw {
        Value::Null => &empty,
        Value::Object(o) => o,
        other => {
            out.errors.push(OptionError {
                code: codes::TYPE,
                option: "(options)".into(),
                message: format!(
                    "the c2c-bridge options are {}; expected an object like {{\"alias\": \"backend\"}}",
                    type_name(other)
                ),
                suggestion: None,
            });
            out.auto_answers_off = true;
            &empty
        }
    };
    for spec in SCHEMA {
        let from_option = obj
            .get(spec.name)
            .filter(|v| !v.is_null())
            .map(|v| check(spec, spec.name, v, false, home));
        let from_env = spec
            .env
            .and_then(|name| {
                env.get(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (name, v))
            })
            .map(|(name, v)| check(spec, name, &Value::String(v.clone()), true, home));
        let mut failed = false;
        let mut chosen = None;
        let env_ok = matches!(from_env, Some(Ok(_)));
        for r in [from_option, from_env].into_iter().flatten() {
            match r {
                Ok(v) => chosen = Some(v),
                Err(e) => {
                    failed = true;
                    out.errors.push(e);
                }
            }
        }
        if failed && spec.touches_permissions {
            out.auto_answers_off = true;
        }
        if failed && spec.name == "inbound" {
            chosen = Some(Checked::Str("hold".into()));
        }
        if env_ok {
            out.from_env.push(spec.name);
        }
        if let Some(v) = chosen {
            store(&mut out.options, spec.name, v);
        }
    }
    for key in obj.keys() {
        if SCHEMA.iter().any(|s| s.name == key) {
            continue;
        }
        let suggestion = suggest(key).map(str::to_string);
        let hint = suggestion
            .as_deref()
            .map(|s| format!("; did you mean {s:?}?"))
            .unwrap_or_else(|| {
                format!(
                    "; the options are {}",
                    SCHEMA.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                )
            });
        out.errors.push(OptionError {
            code: codes::UNKNOWN,
            option: key.chars().take(64).collect(),
            message: format!(
                "unknown option {:?}{hint}",
                key.chars().take(64).collect::<String>()
            ),
            suggestion,
        });
        // An unknown key may be a misspelt permission option: fail safe.
        out.auto_answers_off = true;
    }
    out
}

#[cfg(test)]
mod tests;
