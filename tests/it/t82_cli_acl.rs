//! ACLs from the `ward` CLI (docs/operations.md, "The ward CLI"; G24): `--auth` and
//! `$WARD_AUTH` in zkCli's `SCHEME:CREDENTIALS`, `create --acl` in zkCli's notation,
//! `acl get|set|digest`, and what a client without the credentials gets.

use crate::harness::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_auth_create_acl_get_set_and_digest() {
    bounded(async {
        let server = ServerProcess::builder().in_memory().start();
        let addr = server.addr_str();
        let alice = ["--auth", "digest:alice:secret"];
        let create = [&alice[..], &["create", "--acl", "auth::cdrwa,world:anyone:r", "/p", "v1"]].concat();
        run_cli(&addr, &create).await.success();
        assert_eq!(run_cli(&addr, &["get", "/p"]).await.success().stdout, "v1\n", "anyone may read");
        let refused = run_cli(&addr, &["set", "/p", "v2"]).await;
        assert_eq!(refused.code(), Some(1), "{refused:?}");
        assert!(refused.stderr.contains("set /p: not authorized by the node's ACL"), "{refused:?}");
        run_cli(&addr, &[&alice[..], &["set", "/p", "v2"]].concat()).await.success();

        let digest = run_cli(&addr, &["acl", "digest", "alice:secret"]).await.success().stdout;
        assert_eq!(digest, format!("{}\n", ward_client::digest_id("alice:secret")));
        let from_stdin = run_cli_stdin(&addr, &["acl", "digest"], b"alice:secret\n").await.success().stdout;
        assert_eq!(from_stdin, digest, "the password can come from stdin");
        let hash = digest.trim_end();
        let full = run_cli(&addr, &[&alice[..], &["acl", "get", "/p"]].concat()).await.success().stdout;
        assert_eq!(full, format!("digest:{hash}:cdrwa\nworld:anyone:r\naversion=0\n"));
        let masked = run_cli(&addr, &["acl", "get", "/p"]).await.success().stdout;
        assert_eq!(masked, "digest:alice:x:cdrwa\nworld:anyone:r\naversion=0\n", "digests hidden without ADMIN");

        let acl = format!("digest:{hash}:cdrwa,ip:10.0.0.0/8:r");
        let set = [&alice[..], &["acl", "set", "-v", "0", "/p", &acl]].concat();
        run_cli(&addr, &set).await.success();
        let stale = run_cli(&addr, &set).await;
        assert_eq!(stale.code(), Some(1), "{stale:?}");
        assert!(
            stale.stderr.contains("acl set /p: bad version: expected version 0, the ACL is at version 1"),
            "{stale:?}"
        );
        let denied = run_cli(&addr, &["get", "/p"]).await;
        assert!(denied.stderr.contains("not authorized"), "not from 10.0.0.0/8 any more: {denied:?}");

        // $WARD_AUTH when there is no --auth; JSON output names the permissions.
        let script = format!("WARD_AUTH=digest:alice:secret \"$WARD\" --server {addr} --output json acl get /p");
        let out: serde_json::Value =
            serde_json::from_str(&run_sh(&addr, &script).await.success().stdout).expect("json");
        assert_eq!(out["aversion"], 1);
        assert_eq!(out["acl"][1], json!({"scheme": "ip", "id": "10.0.0.0/8", "perms": ["read"]}));

        let bad = run_cli(&addr, &["create", "--acl", "world:anyone", "/q"]).await;
        assert_eq!(bad.code(), Some(2), "{bad:?}");
        let invalid = run_cli(&addr, &["create", "--acl", "auth::cdrwa", "/q"]).await;
        assert!(invalid.stderr.contains("create /q: invalid ACL"), "auth without credentials: {invalid:?}");
        let unknown = run_cli(&addr, &["--auth", "kerberos:x", "ls", "/"]).await;
        assert!(unknown.stderr.contains("authentication failed"), "{unknown:?}");
        for out in [&refused, &stale, &unknown] {
            assert!(!out.stderr.contains("secret"), "credentials echoed: {out:?}");
        }
    })
    .await
}
