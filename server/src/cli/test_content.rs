//! `test-content <dir>`: runs the writer test plans in `<dir>/tests/*.plan` (see
//! [`crate::plans`]) through the real session core (one session per player of a plan) on a
//! throwaway SQLite database, and prints each failure with its plan's file and line (and the
//! player, in a plan with several). Exit 1 on any failure, 0 when every plan holds;
//! a folder without plans is fine (0 plans). With `--explore`, every conversation is also
//! walked under every quest state the questline allows ([`banter_dialogue::explore`]), and each
//! finding is a line and a failure.

use std::io::{self, Write};
use std::path::Path;

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, require_dir};

pub fn run(dir: &Path, explore: bool, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    if !require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    let report = match report(dir, None) {
        Ok(report) => report,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    print(&report, out)?;
    let mut failed = !report.failures.is_empty();
    if explore {
        let (content, diagnostics) = banter_dialogue::check::load_and_check(dir);
        if !banter_dialogue::check::is_clean(&diagnostics) {
            writeln!(
                err,
                "error: the content has errors; run check-content first"
            )?;
            return Ok(EXIT_PROBLEMS);
        }
        let found = banter_dialogue::explore::explore(&content);
        for finding in &found.findings {
            writeln!(out, "error: {}: {}", finding.file, finding.message)?;
        }
        writeln!(
            out,
            "explored {} quest states in {} walks: {}/{} lines reached ({}%), {} finding(s)",
            found.states,
            found.walks,
            found.lines_reached,
            found.lines,
            found.percent_reached(),
            found.findings.len()
        )?;
        failed |= !found.findings.is_empty();
    }
    Ok(if failed { EXIT_PROBLEMS } else { EXIT_OK })
}

/// Runs the plans of `dir` on a runtime of its own (the CLI has none), on `checked` if the
/// caller has loaded and checked the folder already (see [`crate::plans::run_all`]).
pub fn report(
    dir: &Path,
    checked: Option<banter_dialogue::content::Content>,
) -> io::Result<crate::plans::Report> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let scratch = std::env::temp_dir().join("banter-test-content");
    Ok(runtime.block_on(crate::plans::run_all(dir, checked, &scratch)))
}

/// One line per failure, then the summary.
pub fn print(report: &crate::plans::Report, out: &mut dyn Write) -> io::Result<()> {
    for failure in &report.failures {
        writeln!(out, "error: {failure}")?;
    }
    writeln!(
        out,
        "{} plan(s), {} step(s), {} failed",
        report.plans,
        report.steps,
        report.failures.len()
    )
}
