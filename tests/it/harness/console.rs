//! The console's JSON, as the ensemble tests read it.

use std::net::SocketAddr;
use ward_testkit::DEADLINE;

/// `GET /api/ensemble` on the admin listener `admin`; `None` if it does not answer with JSON
/// (a member being killed or restarted).
pub async fn ensemble_view(admin: SocketAddr) -> Option<serde_json::Value> {
    let asked = tokio::task::spawn_blocking(move || ward_testkit::http::try_get(admin, "/api/ensemble", DEADLINE));
    let (status, body) = asked.await.ok()?.ok()?;
    serde_json::from_str(&body).ok().filter(|_| status == 200)
}
