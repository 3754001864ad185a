//! `ward holders PATH`: the lock queue, holders first, each marked holder or waiter, or
//! `delayed`: a holder whose session ended without releasing, which keeps the lock until its
//! lock-delay is over (`lock-delay-until=TIME`).

use crate::commands::{ward, Failure};
use crate::output::{one_line, put_data, utc, Out};
use serde_json::{json, Map, Value};
use ward_client::{Client, Contender, Error};
use ward_proto::{lock, path};

pub async fn show(client: &Client, dir: &str, out: Out) -> Result<(), Failure> {
    let (queue, holds) = queue(client, dir).await.map_err(ward(format!("holders {dir}")))?;
    if out.json() {
        let contenders: Vec<Value> = queue.iter().zip(&holds).map(|(c, &holds)| object(c, holds)).collect();
        return out.value(&json!({ "path": dir, "contenders": contenders }));
    }
    for (contender, &holds) in queue.iter().zip(&holds) {
        out.line(&line(contender, holds))?;
    }
    Ok(())
}

/// The queue of the lock `dir` (holders first, then waiters), and which of its contenders
/// hold, by the rule every contender follows (ward_proto::lock).
pub async fn queue(client: &Client, dir: &str) -> Result<(Vec<Contender>, Vec<bool>), Error> {
    let queue = client.lock_holders(dir).await?;
    if queue.is_empty() {
        return Ok((queue, Vec::new()));
    }
    // A semaphore's directory records its permits; any other lock ignores the number.
    let permits = match client.get_data(dir).await {
        Ok((data, _)) => lock::parse_semaphore_header(&data).unwrap_or(1),
        Err(Error::NoNode) => 1,
        Err(error) => return Err(error),
    };
    let names: Vec<&str> = queue.iter().map(|c| path::name(&c.path)).collect();
    let holds = lock::holders(&names, permits);
    Ok((queue, holds))
}

/// `holder|waiter|delayed PATH token=N queued=TIME session=ID data=TEXT`, and for a delayed
/// one ` lock-delay-until=TIME`; the data on one line. `queued` is when the contender joined
/// the queue (its node's ctime): the server records no time of the grant, so for a holder
/// that waited it is when it asked, not when it began to hold.
fn line(contender: &Contender, holds: bool) -> String {
    let until = contender.lock_delay_until_ms.map(|ms| format!(" lock-delay-until={}", utc(ms))).unwrap_or_default();
    format!(
        "{} {} token={} queued={} session={} data={}{until}",
        role(contender, holds),
        contender.path,
        contender.token,
        utc(contender.since_ms),
        session(contender),
        one_line(&contender.data)
    )
}

fn object(contender: &Contender, holds: bool) -> Value {
    let mut object = Map::new();
    object.insert("role".into(), json!(role(contender, holds)));
    object.insert("path".into(), json!(contender.path));
    object.insert("token".into(), json!(contender.token));
    object.insert("queued".into(), json!(utc(contender.since_ms)));
    object.insert("queued_ms".into(), json!(contender.since_ms));
    // The names before `queued`, the same instant, kept for the scripts that read them.
    object.insert("since".into(), json!(utc(contender.since_ms)));
    object.insert("since_ms".into(), json!(contender.since_ms));
    object.insert("session".into(), json!(contender.session.map(|s| s.to_string())));
    put_data(&mut object, "data", &contender.data);
    if let Some(ms) = contender.lock_delay_until_ms {
        object.insert("lock_delay_until".into(), json!(utc(ms)));
        object.insert("lock_delay_until_ms".into(), json!(ms));
    }
    Value::Object(object)
}

fn role(contender: &Contender, holds: bool) -> &'static str {
    match (holds, contender.lock_delay_until_ms) {
        (true, Some(_)) => "delayed",
        (true, None) => "holder",
        (false, _) => "waiter",
    }
}

pub fn session(contender: &Contender) -> String {
    contender.session.map_or_else(|| "none".to_owned(), |s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_client::SessionId;

    #[test]
    fn one_line_per_contender() {
        let contender = Contender {
            path: "/l/x__lock__0000000001".into(),
            data: b"a\nb\xff".to_vec(),
            token: 7,
            since_ms: 0,
            session: Some(SessionId(0x2a)),
            lock_delay_until_ms: None,
        };
        assert_eq!(
            line(&contender, true),
            "holder /l/x__lock__0000000001 token=7 queued=1970-01-01T00:00:00.000Z session=0x000000000000002a \
             data=a\\nb\u{fffd}"
        );
        assert!(line(&contender, false).starts_with("waiter /l/"));
        let waiter = object(&contender, false);
        assert_eq!(waiter["role"], "waiter");
        assert_eq!(waiter["data_encoding"], "base64");
        let delayed = Contender { session: None, lock_delay_until_ms: Some(1_500), ..contender };
        assert_eq!(
            line(&delayed, true),
            "delayed /l/x__lock__0000000001 token=7 queued=1970-01-01T00:00:00.000Z session=none data=a\\nb\u{fffd} \
             lock-delay-until=1970-01-01T00:00:01.500Z"
        );
        assert_eq!(object(&delayed, true)["lock_delay_until_ms"], 1_500);
    }
}
