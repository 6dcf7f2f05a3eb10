//! `banter-sim`: Banter's headless client simulator.
//!
//! One subcommand per module in `commands/`; `main` only parses and
//! dispatches.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "banter-sim",
    version,
    about = "Banter headless client simulator"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Simulate hours of play against the bark director and report what
    /// X said, how often, and why a deck beats a die.
    Barks(commands::barks::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Barks(args) => commands::barks::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("banter-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
