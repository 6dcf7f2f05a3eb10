//! One module per `banter-sim` subcommand.

pub mod abuse;
pub mod attack;
pub mod barks;
pub mod bench;
pub mod load;
pub mod play;
pub mod tungstenite_echo;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use banter_dialogue::content::Content;
use banter_sim::world;

/// The server's address, shared by the networked subcommands.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7350";

/// Loads `--content` (default: the workspace's `content/`).
pub fn content(dir: Option<&PathBuf>) -> Result<Arc<Content>> {
    let dir = dir.cloned().unwrap_or_else(world::default_content_dir);
    world::load_content(&dir).with_context(|| format!("the content in {}", dir.display()))
}

/// A runtime for the networked subcommands.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
