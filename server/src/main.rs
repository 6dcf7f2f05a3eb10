//! `banter-server`: a thin entry point. Every command lives in the library ([`banter_server::cli`])
//! so it can be tested without spawning a process and so later commands slot in beside it.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = banter_server::cli::Cli::parse();
    // Unlocked handles: `serve` logs from worker threads, and a lock held here for the whole
    // command would block every one of them (and with them, shutdown).
    let status = banter_server::cli::run(cli, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(status)
}
