//! One module per `banter-sim` subcommand.

pub mod barks;
