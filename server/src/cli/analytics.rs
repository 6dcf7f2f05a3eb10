//! `banter-server analytics`: narrative analytics from the store, as tables for a writer (or
//! JSON with `--json`, the same document `GET /admin/analytics` answers).
//!
//! It reads the database the server writes (`DATABASE_URL`, the same default) and the content
//! folder, which says which version of each conversation is current; without a readable
//! content folder every version is summed.

use std::io::{self, Write};
use std::path::Path;

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::analytics::{AnalyticsQuery, Answer, QueryError, report};
use crate::served::ContentVersion;
use crate::store::ConnectOptions;

pub fn run(
    database_url: &str,
    content: &Path,
    query: &AnalyticsQuery,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let library = match ContentVersion::load(content, 0) {
        Ok(library) => Some(library),
        Err(e) => {
            writeln!(
                err,
                "warning: {e}; without it every content version is summed"
            )?;
            None
        }
    };
    let runtime = super::serve::runtime()?;
    let answered = runtime.block_on(async {
        let store = crate::store::connect(database_url, ConnectOptions::default()).await?;
        let answer = crate::analytics::answer(store.as_ref(), library.as_ref(), query).await;
        store.close().await;
        answer
    });
    let answer = match answered {
        Ok(answer) => answer,
        Err(QueryError::Store(e)) => {
            writeln!(err, "error: {} ({})", e, super::serve::redact(database_url))?;
            return Ok(EXIT_PROBLEMS);
        }
        Err(e @ (QueryError::Bad(_) | QueryError::UnknownConversation(_))) => {
            writeln!(err, "error: {e}")?;
            return Ok(EXIT_USAGE);
        }
    };
    if json {
        let text = serde_json::to_string_pretty(&answer).map_err(io::Error::other)?;
        writeln!(out, "{text}")?;
        return Ok(EXIT_OK);
    }
    match answer {
        Answer::Conversation(report) => write!(out, "{}", report::render(&report))?,
        Answer::Index(index) => {
            writeln!(
                out,
                "conversations ({} versions, locale {})",
                index.version,
                index.locale.as_deref().unwrap_or("all")
            )?;
            writeln!(out, "  {:<28} {:>8}  endings", "conversation", "opens")?;
            for summary in &index.conversations {
                let endings: Vec<String> = summary
                    .endings
                    .iter()
                    .map(|(how, n)| format!("{how} {n}"))
                    .collect();
                writeln!(
                    out,
                    "  {:<28} {:>8}  {}",
                    summary.conversation,
                    summary.opens,
                    endings.join(", ")
                )?;
            }
        }
    }
    Ok(EXIT_OK)
}
