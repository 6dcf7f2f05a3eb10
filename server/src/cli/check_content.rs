//! `check-content <dir>`: the loader's diagnostics and the content checks, one line each, then a
//! summary. Exit 1 on any error, 0 on warnings only, so CI can gate on it. The content
//! migrations file is read too (a bad one would refuse the push that brings it). Each locale's
//! string table gets a coverage line (translated / total, stale).

use std::io::{self, Write};
use std::path::Path;

use banter_dialogue::check;

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};

pub fn run(
    dir: &Path,
    against: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if !super::require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    if let Some(old) = against
        && !super::require_dir(old, err)?
    {
        return Ok(EXIT_USAGE);
    }
    let check::Checked {
        content,
        diagnostics,
        coverage,
    } = check::load_and_check_with_coverage(dir);
    for d in &diagnostics {
        writeln!(out, "{d}")?;
    }
    // Coverage per locale (its problems are among the diagnostics above).
    for locale in &coverage {
        writeln!(
            out,
            "locale {}: {}/{} lines translated ({}%), {} stale ({})",
            locale.locale,
            locale.translated,
            locale.total,
            locale.percent(),
            locale.stale,
            locale.file
        )?;
    }
    let migrations = crate::migrations::load(dir);
    if let Err(problem) = &migrations {
        writeln!(out, "error: {problem}")?;
    }
    // What this version would do to players in the middle of the old one: warnings.
    let mut changed = 0;
    if let Some(old) = against {
        let (old_content, _) = banter_dialogue::content::Content::load(old);
        for change in banter_dialogue::against::compare(&old_content, &content) {
            writeln!(
                out,
                "warning: against {}: {}",
                old.display(),
                change.message
            )?;
            changed += 1;
        }
    }
    // The writer test plans, when the content is clean enough to run them: a failing plan is
    // an error like any other, so CI gating on check-content gates on the plans too.
    let plans_failed = if check::is_clean(&diagnostics) && dir.join(crate::plans::FOLDER).is_dir() {
        let report = super::test_content::report(dir, Some(content))?;
        super::test_content::print(&report, out)?;
        report.failures.len()
    } else {
        0
    };
    let content_errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - content_errors + changed;
    let errors = content_errors + usize::from(migrations.is_err()) + plans_failed;
    writeln!(
        out,
        "{errors} {}, {warnings} {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )?;
    Ok(
        if check::is_clean(&diagnostics) && migrations.is_ok() && plans_failed == 0 {
            EXIT_OK
        } else {
            EXIT_PROBLEMS
        },
    )
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
