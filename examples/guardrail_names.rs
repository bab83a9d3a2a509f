//! Prints the guardrail's protected names as Markdown: the block between the `protected-names`
//! markers of SECURITY.md (a unit test fails when the two differ).

fn main() {
    print!(
        "{}",
        c2c_bridge::policy::guardrail::protected_names_markdown()
    );
}
