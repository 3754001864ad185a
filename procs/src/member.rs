//! Questions put to one running member over Ward's protocol, each with short bounds so that
//! a member cut off or stopped answers "no" in seconds: for polling under
//! [`wait_until`](crate::wait_until).

use std::time::Duration;
use ward_client::Client;

/// A session on the member at `addr` that has synced with the leader, if the member serves
/// one now (a member cut off from the others turns its clients away).
pub async fn synced(addr: &str) -> Option<Client> {
    let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect();
    let client = tokio::time::timeout(Duration::from_secs(5), connecting).await.ok()?.ok()?;
    tokio::time::timeout(Duration::from_secs(5), client.sync("/")).await.ok()?.ok()?;
    Some(client)
}

/// Whether the member at `addr`, synced with the leader, has the node `path` now.
pub async fn member_has(addr: &str, path: &str) -> bool {
    let Some(client) = synced(addr).await else { return false };
    matches!(client.exists(path).await, Ok(Some(_)))
}
