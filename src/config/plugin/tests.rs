//! Validation of every plugin option (issue 18): type, range, vocabulary, unknown keys with a
//! suggestion, environment overrides, and when auto-answers turn off.

use super::*;
use serde_json::json;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run(raw: Value) -> Validated {
    validate(&raw, &HashMap::new())
}

fn codes_of(v: &Validated) -> Vec<(&'static str, &str)> {
    v.errors
        .iter()
        .map(|e| (e.code, e.option.as_str()))
        .collect()
}

#[test]
fn empty_and_null_options_are_valid_and_leave_answers_on() {
    for raw in [json!({}), Value::Null] {
        let v = run(raw);
        assert!(v.errors.is_empty());
        assert!(!v.auto_answers_off);
        assert_eq!(v.options, PluginOptions::default());
    }
}

#[test]
fn every_option_accepts_a_good_value() {
    let v = run(json!({
        "alias": "backend", "brokerRoot": "/tmp/root", "peerPermissions": "Ask",
        "supervisors": ["boss", " lead "], "inbound": "hold", "maxMessageBytes": 4096,
        "heldCap": 5, "heldTtlSecs": 60, "rateBurst": 3, "rateWindowSecs": 10,
        "fallbackIntervalMs": 1000, "retryBaseMs": 100,
    }));
    assert!(v.errors.is_empty(), "{:?}", v.errors);
    assert!(!v.auto_answers_off);
    let o = v.options;
    assert_eq!(o.alias.as_deref(), Some("backend"));
    assert_eq!(o.broker_root.as_deref(), Some("/tmp/root"));
    assert_eq!(o.peer_permissions.as_deref(), Some("ask"));
    assert_eq!(o.supervisors, vec!["boss", "lead"]);
    assert_eq!(o.inbound.as_deref(), Some("hold"));
    assert_eq!(
        (
            o.max_message_bytes,
            o.held_cap,
            o.held_ttl_secs,
            o.rate_burst,
            o.rate_window_secs
        ),
        (Some(4096), Some(5), Some(60), Some(3), Some(10))
    );
    assert_eq!(
        (o.fallback_interval_ms, o.retry_base_ms),
        (Some(1000), Some(100))
    );
}

#[test]
fn every_option_rejects_the_wrong_type() {
    let wrong = |spec: &OptionSpec| match spec.rule {
        Rule::Int { .. } => json!("16k"),
        Rule::AliasList => json!("boss"),
        _ => json!(false),
    };
    for spec in SCHEMA {
        let v = run(json!({ spec.name: wrong(spec) }));
        assert_eq!(
            codes_of(&v),
            vec![(codes::TYPE, spec.name)],
            "{}",
            spec.name
        );
        assert_eq!(
            v.auto_answers_off, spec.touches_permissions,
            "{}",
            spec.name
        );
        assert!(
            v.errors[0].message.contains("expected"),
            "{}",
            v.errors[0].message
        );
    }
}

#[test]
fn every_number_rejects_out_of_range_fractions_and_negatives() {
    for spec in SCHEMA {
        let Rule::Int { min, max } = spec.rule else {
            continue;
        };
        for bad in [json!(min - 1), json!(max + 1), json!(-5)] {
            let v = run(json!({ spec.name: bad }));
            assert_eq!(
                codes_of(&v),
                vec![(codes::RANGE, spec.name)],
                "{} {bad}",
                spec.name
            );
            assert!(v.errors[0].message.contains(spec.unit));
        }
        let v = run(json!({ spec.name: 1.5 }));
        assert_eq!(codes_of(&v), vec![(codes::TYPE, spec.name)]);
        for good in [min, max] {
            assert!(run(json!({ spec.name: good })).errors.is_empty());
        }
    }
}

#[test]
fn words_outside_the_vocabulary_are_errors() {
    for spec in SCHEMA {
        let Rule::Enum(words) = spec.rule else {
            continue;
        };
        let v = run(json!({ spec.name: "sometimes" }));
        assert_eq!(codes_of(&v), vec![(codes::VALUE, spec.name)]);
        assert!(words.iter().all(|w| v.errors[0].message.contains(w)));
        assert_eq!(v.auto_answers_off, spec.touches_permissions);
    }
}

#[test]
fn a_wrong_inbound_holds_instead_of_accepting() {
    let v = run(json!({"inbound": "acept"}));
    assert_eq!(v.options.inbound.as_deref(), Some("hold"));
    assert!(!v.auto_answers_off);
}

#[test]
fn aliases_paths_and_supervisors_are_checked() {
    let v =
        run(json!({"alias": "bad alias", "brokerRoot": "rel/dir", "supervisors": ["ok", "c2c"]}));
    assert_eq!(
        codes_of(&v),
        vec![
            (codes::VALUE, "alias"),
            (codes::VALUE, "brokerRoot"),
            (codes::VALUE, "supervisors")
        ]
    );
    assert!(v.auto_answers_off, "supervisors touch permissions");
    assert_eq!(v.options, PluginOptions::default());
    let v = run(json!({"supervisors": ["ok", 3]}));
    assert_eq!(codes_of(&v), vec![(codes::TYPE, "supervisors")]);
    let home = env(&[("HOME", "/home/u/")]);
    let v = validate(&json!({"brokerRoot": "~/shared"}), &home);
    assert_eq!(v.options.broker_root.as_deref(), Some("/home/u/shared"));
}

#[test]
fn unknown_keys_suggest_the_nearest_option_and_turn_answers_off() {
    let v = run(json!({"peerPermission": "deny"}));
    assert_eq!(codes_of(&v), vec![(codes::UNKNOWN, "peerPermission")]);
    assert_eq!(v.errors[0].suggestion.as_deref(), Some("peerPermissions"));
    assert!(v.errors[0]
        .message
        .contains("did you mean \"peerPermissions\""));
    assert!(v.auto_answers_off);
    for (typo, meant) in [
        ("maxMessageByte", "maxMessageBytes"),
        ("brokerroot", "brokerRoot"),
        ("Alias", "alias"),
        ("heldTTLSecs", "heldTtlSecs"),
        ("supervisor", "supervisors"),
    ] {
        assert_eq!(suggest(typo), Some(meant), "{typo}");
    }
    let v = run(json!({"colour": "blue"}));
    assert_eq!(v.errors[0].suggestion, None);
    assert!(
        v.errors[0].message.contains("peerPermissions"),
        "lists the options"
    );
    assert!(v.auto_answers_off);
}

#[test]
fn options_that_are_not_an_object_turn_answers_off() {
    let v = run(json!(["alias"]));
    assert_eq!(codes_of(&v), vec![(codes::TYPE, "(options)")]);
    assert!(v.auto_answers_off);
}

#[test]
fn environment_overrides_win_and_are_validated_the_same_way() {
    let e = env(&[
        ("C2C_BRIDGE_ALIAS", "from-env"),
        ("C2C_BRIDGE_MAX_MESSAGE_BYTES", "2048"),
        ("C2C_SUPERVISORS", "a, b,,"),
        ("C2C_BRIDGE_PEER_PERMISSIONS", "deny"),
        ("C2C_BRIDGE_INBOUND", " "),
    ]);
    let v = validate(
        &json!({"alias": "opt", "maxMessageBytes": 100, "inbound": "auto"}),
        &e,
    );
    assert!(v.errors.is_empty(), "{:?}", v.errors);
    assert_eq!(v.options.alias.as_deref(), Some("from-env"));
    assert_eq!(v.options.max_message_bytes, Some(2048));
    assert_eq!(v.options.supervisors, vec!["a", "b"]);
    assert_eq!(v.options.peer_permissions.as_deref(), Some("deny"));
    assert_eq!(
        v.options.inbound.as_deref(),
        Some("auto"),
        "a blank variable is unset"
    );
    assert_eq!(
        v.from_env,
        vec!["alias", "peerPermissions", "supervisors", "maxMessageBytes"]
    );

    let v = validate(&json!({}), &env(&[("C2C_BRIDGE_MAX_MESSAGE_BYTES", "16k")]));
    assert_eq!(
        codes_of(&v),
        vec![(codes::TYPE, "C2C_BRIDGE_MAX_MESSAGE_BYTES")]
    );
    assert_eq!(v.options.max_message_bytes, None, "never 16384");
    let v = validate(&json!({}), &env(&[("C2C_BRIDGE_PEER_PERMISSIONS", "alow")]));
    assert_eq!(
        codes_of(&v),
        vec![(codes::VALUE, "C2C_BRIDGE_PEER_PERMISSIONS")]
    );
    assert!(v.auto_answers_off);
    // A bad option is reported even when the environment overrides it.
    let v = validate(
        &json!({"peerPermissions": false}),
        &env(&[("C2C_BRIDGE_PEER_PERMISSIONS", "ask")]),
    );
    assert_eq!(codes_of(&v), vec![(codes::TYPE, "peerPermissions")]);
    assert!(v.auto_answers_off);
    assert_eq!(v.options.peer_permissions.as_deref(), Some("ask"));
}

#[test]
fn null_values_count_as_unset() {
    let v = run(json!({"alias": null, "maxMessageBytes": null}));
    assert!(v.errors.is_empty());
    assert_eq!(v.options, PluginOptions::default());
}

#[test]
fn plugin_timers_get_their_documented_defaults_in_milliseconds() {
    let o = run(json!({})).options;
    assert_eq!(o.fallback_interval_ms, None);
    assert_eq!(o.fallback_interval_ms_or_default(), 2_000);
    assert_eq!(o.retry_base_ms_or_default(), 500);
    let o = run(json!({"fallbackIntervalMs": 100, "retryBaseMs": 10})).options;
    assert_eq!(
        (
            o.fallback_interval_ms_or_default(),
            o.retry_base_ms_or_default()
        ),
        (100, 10)
    );
}
