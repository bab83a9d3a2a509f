//! Prints the modeled-program table of the guardrail as Markdown: the block between the
//! `allow-table` markers of SECURITY.md (a unit test fails when the two differ).

fn main() {
    print!("{}", c2c_bridge::policy::guardrail::allow_table_markdown());
}
