//! The whole znode tree as one value, to compare what a server holds before and after a
//! restart.

use ward_client::{Client, Error, Stat};

/// Every node as (path, data, stat), sorted by path: read with get_children / get_data. The
/// tree must not change meanwhile.
pub async fn tree_digest(client: &Client) -> Result<Vec<(String, Vec<u8>, Stat)>, Error> {
    let mut nodes = Vec::new();
    let mut stack = vec!["/".to_string()];
    while let Some(path) = stack.pop() {
        let (data, stat) = client.get_data(&path).await?;
        for child in client.get_children(&path).await? {
            stack.push(if path == "/" { format!("/{child}") } else { format!("{path}/{child}") });
        }
        nodes.push((path, data, stat));
    }
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(nodes)
}

/// Panics naming the first difference between two digests.
pub fn assert_same_tree(before: &[(String, Vec<u8>, Stat)], after: &[(String, Vec<u8>, Stat)], what: &str) {
    let (mut b, mut a) = (before.iter().peekable(), after.iter().peekable());
    loop {
        match (b.next(), a.next()) {
            (None, None) => return,
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) if x.0 == y.0 => panic!(
                "{what}: node {} differs:\n before: data {:?} stat {:?}\n after:  data {:?} stat {:?}",
                x.0,
                String::from_utf8_lossy(&x.1),
                x.2,
                String::from_utf8_lossy(&y.1),
                y.2
            ),
            (x, y) => panic!(
                "{what}: node sets differ ({} nodes before, {} after): first mismatch {:?} vs {:?}",
                before.len(),
                after.len(),
                x.map(|n| &n.0),
                y.map(|n| &n.0)
            ),
        }
    }
}
