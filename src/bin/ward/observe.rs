//! `ward elect --observe PATH`: the election's leader, then each new one, until interrupted.

use crate::commands::{ward, Failure};
use crate::output::{one_line, put_data, Out};
use crate::signals::Signals;
use serde_json::{json, Map, Value};
use ward_client::{Client, Leader};

/// One line per leader: `leader=NAME node=PATH token=N`, or `leader=none`; in JSON
/// `{"leader", "leader_encoding", "node", "token"}` (nulls when there is no leader). NAME
/// is what the leader campaigned with (`elect --id`).
pub async fn leaders(client: &Client, path: &str, out: Out, mut signals: Signals) -> Result<(), Failure> {
    let mut observer = client.election(path).observe();
    loop {
        let leader = tokio::select! {
            next = observer.next() => next.map_err(ward(format!("observe {path}")))?,
            _ = signals.recv() => return Ok(()),
        };
        if out.json() {
            out.value(&object(leader.as_ref()))?;
        } else {
            out.line(&line(leader.as_ref()))?;
        }
    }
}

fn line(leader: Option<&Leader>) -> String {
    match leader {
        Some(l) => format!("leader={} node={} token={}", one_line(&l.data), l.path, l.token),
        None => "leader=none".to_owned(),
    }
}

fn object(leader: Option<&Leader>) -> Value {
    let Some(leader) = leader else {
        return json!({"leader": null, "leader_encoding": null, "node": null, "token": null});
    };
    let mut object = Map::new();
    put_data(&mut object, "leader", &leader.data);
    object.insert("node".into(), json!(leader.path));
    object.insert("token".into(), json!(leader.token));
    Value::Object(object)
}
