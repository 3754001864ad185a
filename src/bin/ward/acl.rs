//! `ward acl get|set|digest`: nodes' ACLs in zkCli's notation, and digest ids.

use crate::cli::AclAction;
use crate::commands::{ward, Failure};
use crate::output::Out;
use serde_json::json;
use std::io::Read;
use ward_client::{digest_id, perms, Acl, Client, Error};

/// `acl digest`, which needs no server; `None` for the actions that do.
pub fn offline(action: &AclAction, out: Out) -> Option<Result<u8, Failure>> {
    let AclAction::Digest { user_password } = action else { return None };
    let given = match user_password {
        Some(given) => given.clone(),
        None => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().lock().read_to_string(&mut text) {
                return Some(Err(Failure::Input(e)));
            }
            text.trim_end_matches(['\n', '\r']).to_owned()
        }
    };
    if !given.contains(':') {
        return Some(Err(Failure::Usage("expected USER:PASSWORD".into())));
    }
    let id = digest_id(&given);
    let printed = if out.json() { out.value(&json!({ "digest": id })) } else { out.line(&id) };
    Some(printed.map(|()| 0))
}

pub async fn run(client: &Client, action: AclAction, out: Out) -> Result<(), Failure> {
    match action {
        AclAction::Get { path } => {
            let (acl, stat) = client.get_acl(&path).await.map_err(ward(format!("acl get {path}")))?;
            if out.json() {
                let entries: Vec<_> = acl.iter().map(entry_json).collect();
                return out.value(&json!({ "path": path, "acl": entries, "aversion": stat.aversion }));
            }
            acl.iter().try_for_each(|entry| out.line(&entry.notation()))?;
            out.line(&format!("aversion={}", stat.aversion))
        }
        AclAction::Set { version, path, acl } => match client.set_acl(&path, &acl.0, version).await {
            Ok(_) => Ok(()),
            Err(Error::BadVersion) => {
                let now = match client.get_acl(&path).await {
                    Ok((_, stat)) => format!(", the ACL is at version {}", stat.aversion),
                    Err(_) => String::new(),
                };
                let expected = version.map_or_else(String::new, |v| format!(": expected version {v}"));
                Err(Failure::BadVersion { what: format!("acl set {path}"), detail: format!("{expected}{now}") })
            }
            Err(error) => Err(ward(format!("acl set {path}"))(error)),
        },
        AclAction::Digest { .. } => Ok(()),
    }
}

fn entry_json(entry: &Acl) -> serde_json::Value {
    let names = [
        (perms::READ, "read"),
        (perms::WRITE, "write"),
        (perms::CREATE, "create"),
        (perms::DELETE, "delete"),
        (perms::ADMIN, "admin"),
    ];
    let granted: Vec<&str> = names.iter().filter(|(bit, _)| entry.perms & bit != 0).map(|(_, name)| *name).collect();
    json!({ "scheme": entry.id.scheme, "id": entry.id.id, "perms": granted })
}
