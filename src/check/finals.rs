//! What the servers show once the faults are healed and the workloads have stopped: each
//! member's synced reads of the run's nodes, its listing of the sequential creates, and its
//! state digest.

use super::checkers::{FinalRead, Listing, MemberDigest};
use super::registers::version;
use super::shared::{connect, OP_LIMIT, SETTLE};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::Client;

/// What each member shows of `paths` at the end: its own client, `sync`, then a read.
pub async fn reads(members: &[String], paths: &[String]) -> Vec<FinalRead> {
    let mut finals = Vec::new();
    for member in members {
        let client = connect(member).await;
        for path in paths {
            let read = match &client {
                Err(e) => Err(e.to_string()),
                Ok(client) => read_synced(client, path).await,
            };
            finals.push(FinalRead { member: member.clone(), path: path.clone(), read });
        }
        if let Ok(client) = client {
            let _ = timeout(OP_LIMIT, client.close()).await;
        }
    }
    finals
}

async fn synced(client: &Client, path: &str) -> Result<(), String> {
    match timeout(OP_LIMIT, client.sync(path)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("sync: {e}")),
        Err(_) => Err(format!("sync took over {OP_LIMIT:?}")),
    }
}

async fn read_synced(client: &Client, path: &str) -> Result<Option<(Vec<u8>, u64)>, String> {
    synced(client, path).await?;
    match timeout(OP_LIMIT, client.get_data(path)).await {
        Ok(Ok((data, stat))) => Ok(Some((data, version(&stat)))),
        Ok(Err(ward_client::Error::NoNode)) => Ok(None),
        Ok(Err(e)) => Err(format!("read: {e}")),
        Err(_) => Err(format!("read took over {OP_LIMIT:?}")),
    }
}

/// Each member's listing of `dir`, with the data of every child not in `claimed` (the names
/// acknowledged creates returned).
pub async fn listings(members: &[String], dir: &str, claimed: &HashSet<&str>) -> Vec<Listing> {
    let mut listings = Vec::new();
    for member in members {
        let client = match connect(member).await {
            Ok(client) => client,
            Err(e) => {
                listings.push(Listing { member: member.clone(), names: Err(e.to_string()), unclaimed: Vec::new() });
                continue;
            }
        };
        let names = match synced(&client, dir).await {
            Err(why) => Err(why),
            Ok(()) => match timeout(OP_LIMIT, client.get_children(dir)).await {
                Ok(Ok(names)) => Ok(names),
                Ok(Err(e)) => Err(format!("list: {e}")),
                Err(_) => Err(format!("list took over {OP_LIMIT:?}")),
            },
        };
        let mut unclaimed = Vec::new();
        for name in names.iter().flatten().filter(|n| !claimed.contains(n.as_str())) {
            let data = match timeout(OP_LIMIT, client.get_data(&format!("{dir}/{name}"))).await {
                Ok(Ok((data, _))) => Ok(String::from_utf8_lossy(&data).into_owned()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("read took over {OP_LIMIT:?}")),
            };
            unclaimed.push((name.clone(), data));
        }
        let _ = timeout(OP_LIMIT, client.close()).await;
        listings.push(Listing { member: member.clone(), names, unclaimed });
    }
    listings
}

/// Each member's `GET /digest`, read again until every member reports the same zxid (they
/// may still be applying the last closes and expiries) or [`SETTLE`] has passed; the last
/// round read.
pub async fn digests(admins: &[(String, SocketAddr)]) -> Vec<MemberDigest> {
    let start = Instant::now();
    loop {
        let mut round = Vec::new();
        for (member, admin) in admins {
            let admin = *admin;
            let got = tokio::task::spawn_blocking(move || {
                ward_procs::http::try_get(admin, "/digest", Duration::from_secs(5))
            })
            .await;
            let read = match got {
                Ok(Ok((200, body))) => parse(&body).ok_or_else(|| format!("not a digest: {body:?}")),
                Ok(Ok((status, body))) => Err(format!("GET /digest answered {status}: {}", body.trim())),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            round.push(MemberDigest { member: member.clone(), read });
        }
        let zxids: HashSet<Option<u64>> = round.iter().map(|d| d.read.as_ref().ok().map(|r| r.0)).collect();
        let agreed = zxids.len() == 1 && !zxids.contains(&None);
        if agreed || start.elapsed() > SETTLE {
            return round;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `zxid 12 nodes 3 sessions 1 digest 00ff...`: the zxid, and the line itself.
fn parse(body: &str) -> Option<(u64, String)> {
    let line = body.trim();
    let zxid = line.strip_prefix("zxid ")?.split(' ').next()?.parse().ok()?;
    Some((zxid, line.to_owned()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_digest_line_parses() {
        let line = "zxid 12 nodes 3 sessions 1 digest 00000000000000ff\n";
        assert_eq!(super::parse(line), Some((12, line.trim().to_owned())));
        assert_eq!(super::parse("not found"), None);
    }
}
