//! The `banter-server` command line: one subcommand per module.
//!
//! Exit codes are a contract scripts and CI rely on: [`EXIT_OK`] when all is well (warnings
//! allowed), [`EXIT_PROBLEMS`] when the command ran and found errors, [`EXIT_USAGE`] when it
//! could not run as asked (clap uses 2 for its own usage errors too).

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

pub mod analytics;
pub mod check_content;
pub mod export;
pub mod gen_content;
pub mod serve;
pub mod strings;
pub mod test_content;

/// Everything fine; warnings may have been printed.
pub const EXIT_OK: u8 = 0;
/// The command ran and found errors (content with errors).
pub const EXIT_PROBLEMS: u8 = 1;
/// The command could not do what was asked: bad arguments, missing folder, unknown name.
pub const EXIT_USAGE: u8 = 2;

/// Banter's authoritative dialogue server and its content tools.
#[derive(Debug, Parser)]
#[command(name = "banter-server", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Checks a content folder: one line per problem, then a summary. Exits 1 on any error.
    CheckContent {
        /// The content folder (world.json, quests.json, dialogue/).
        dir: PathBuf,
        /// The version players are on now: also report what this one would do to players in
        /// the middle of it (removed or renamed quests, objectives and nodes).
        #[arg(long, value_name = "OLD_DIR")]
        against: Option<PathBuf>,
    },
    /// Prints a merged conversation as a graph a writer can render.
    Export {
        /// A conversation name (`Fennick`) or an NPC id (`skipper_gullrock`).
        conversation: String,
        /// The content folder.
        #[arg(long, default_value = "content")]
        content: PathBuf,
        /// The picture language.
        #[arg(long, value_enum, default_value_t = Format::Dot)]
        format: Format,
    },
    /// Generates base conversations, quests and NPC entries from per-NPC transcriptions.
    GenContent {
        /// The folder of transcriptions (`*.json`, one per NPC).
        transcriptions: PathBuf,
        /// The content folder to write into (layers and hand-written files are never touched).
        #[arg(long)]
        out: PathBuf,
    },
    /// Runs the writer test plans in `<dir>/tests/*.plan` through the real walk, resolver and
    /// quest engine on a throwaway database. Exits 1 on any failure.
    TestContent {
        /// The content folder.
        #[arg(default_value = "content")]
        dir: PathBuf,
        /// Also walk every conversation under every quest state the questline allows, and
        /// report lines never reached, responses never offered, actions never armed, quests
        /// never completed and dead ends.
        #[arg(long)]
        explore: bool,
    },
    /// Line ids and string tables (`strings tag`).
    Strings {
        #[command(subcommand)]
        command: StringsCommand,
    },
    /// Runs the server: no configuration needed for a local run (SQLite under ./data).
    Serve(crate::config::ServeArgs),
    /// Applies the database migrations and exits.
    Migrate {
        /// Database URL: `postgres://...` or `sqlite://path`.
        #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/banter.db")]
        database_url: String,
    },
    /// Narrative analytics from the store: one conversation's report (visits, choice splits,
    /// endings, time per line, quest funnels), or every conversation's opens and endings.
    Analytics {
        /// The conversation to report; without it, every conversation's summary.
        #[arg(long)]
        conversation: Option<String>,
        /// A content version (the conversation's hash) or `all`; by default the version in the
        /// content folder.
        #[arg(long)]
        version: Option<String>,
        /// Only conversations read in this locale.
        #[arg(long)]
        locale: Option<String>,
        /// The content folder, which says which versions are current.
        #[arg(long, default_value = "content")]
        content: PathBuf,
        /// Database URL: `postgres://...` or `sqlite://path`.
        #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/banter.db")]
        database_url: String,
        /// Print the JSON `GET /admin/analytics` answers instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// `strings` subcommands.
#[derive(Debug, Subcommand)]
pub enum StringsCommand {
    /// Adds a `LineId` to every line and response that has text and none, in place. Ids
    /// already written never change.
    Tag {
        /// The content folder.
        #[arg(default_value = "content")]
        dir: PathBuf,
    },
    /// Writes or updates `<dir>/locales/<locale>.po`: new lines added, removed lines dropped,
    /// translations of a changed source kept and marked fuzzy.
    Export {
        /// The locale, a BCP 47 tag (`ja`, `pt-BR`).
        #[arg(long)]
        locale: String,
        /// Print the locale's recording script for a voice studio (CSV: line id, speaker, text,
        /// the line before it, direction, locale, clip path) instead of writing the table.
        #[arg(long)]
        voice: bool,
        /// With `--voice`: the protagonist's lines too (responses and barks), for a game whose
        /// player character is voiced.
        #[arg(long, requires = "voice")]
        player: bool,
        /// The content folder.
        #[arg(default_value = "content")]
        dir: PathBuf,
    },
}

/// `--format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Graphviz: `banter-server export Fennick | dot -Tpng > fennick.png`.
    Dot,
    /// A Mermaid flowchart, for Markdown previews.
    Mermaid,
}

impl From<Format> for banter_dialogue::export::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Dot => banter_dialogue::export::Format::Dot,
            Format::Mermaid => banter_dialogue::export::Format::Mermaid,
        }
    }
}

/// Runs one command, writing its output to `out` and its complaints to `err`. Returns the exit
/// status. A failed write (a closed pipe, as in `| head`) ends the command quietly instead of
/// panicking the way `println!` would.
pub fn run(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let result = match cli.command {
        Command::CheckContent { dir, against } => {
            check_content::run(&dir, against.as_deref(), out, err)
        }
        Command::Export {
            conversation,
            content,
            format,
        } => export::run(&content, &conversation, format.into(), out, err),
        Command::GenContent {
            transcriptions,
            out: out_dir,
        } => gen_content::run(&transcriptions, &out_dir, out, err),
        Command::TestContent { dir, explore } => test_content::run(&dir, explore, out, err),
        Command::Strings { command } => match command {
            StringsCommand::Tag { dir } => strings::tag(&dir, out, err),
            StringsCommand::Export {
                locale,
                voice,
                player,
                dir,
            } => strings::export(&dir, &locale, voice.then_some(player), out, err),
        },
        Command::Serve(args) => serve::run(&args, err),
        Command::Migrate { database_url } => serve::migrate(&database_url, out, err),
        Command::Analytics {
            conversation,
            version,
            locale,
            content,
            database_url,
            json,
        } => {
            let query = crate::analytics::AnalyticsQuery {
                conversation,
                version,
                locale,
            };
            analytics::run(&database_url, &content, &query, json, out, err)
        }
    };
    let status = result.unwrap_or(EXIT_PROBLEMS);
    let _ = out.flush();
    status
}

/// The content folder must exist: loading a missing folder would succeed with nothing in it and
/// report a clean, empty game.
fn require_dir(dir: &std::path::Path, err: &mut dyn Write) -> std::io::Result<bool> {
    if dir.is_dir() {
        return Ok(true);
    }
    writeln!(err, "error: `{}` is not a content folder", dir.display())?;
    Ok(false)
}
