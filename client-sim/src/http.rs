//! Where the server is and its HTTP calls: the client library's ([`banter_client::endpoint`],
//! [`banter_client::http`]).

pub use banter_client::endpoint::Endpoint;
pub use banter_client::http::{HTTP_TIMEOUT, Http};
