//! Player tokens as the attack catalogue and the abuse tool need them (minted with a secret,
//! expired, tampered, unsigned) and the development keys: the client library's
//! ([`banter_client::token`]).

pub use banter_client::http::DEV_SERVICE_KEY;
pub use banter_client::token::{DEV_SECRET, mint, tampered, unix_now, unsigned, with_subject};
