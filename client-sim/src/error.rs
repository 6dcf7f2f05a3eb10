//! The simulator's errors are the client library's: one enum, so a refusal, a dropped
//! connection and a server bug are told apart the same way everywhere.

pub use banter_client::error::{Error as SimError, Result};
