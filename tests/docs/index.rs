//! What the workspace's code defines, read from its sources: every file, every module, every
//! type and function, and what each type has (methods in its impl and trait blocks, fields,
//! variants, associated items).

use super::lex::{tokens, Token};
use std::collections::{HashMap, HashSet};
use std::path::Path;

#[derive(Default)]
pub struct Index {
    /// Every file, relative to the workspace root, with `/` separators.
    pub files: Vec<String>,
    /// File stems of `.rs` files, directories holding them, and `mod` names.
    pub modules: HashSet<String>,
    /// Structs, enums, unions, traits and type aliases.
    pub types: HashSet<String>,
    /// Functions, constants, statics and macros, besides the types and modules.
    pub items: HashSet<String>,
    pub members: HashMap<String, HashSet<String>>,
}

const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules"];

impl Index {
    pub fn of_workspace(root: &Path) -> Index {
        let mut index = Index::default();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !SKIPPED_DIRS.contains(&name.as_str()) {
                        stack.push(path);
                    }
                    continue;
                }
                let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                if let Some(stem) = name.strip_suffix(".rs") {
                    index.modules.insert(stem.to_string());
                    if let Some(parent) = path.parent().and_then(|p| p.file_name()) {
                        index.modules.insert(parent.to_string_lossy().into_owned());
                    }
                    if let Ok(src) = std::fs::read_to_string(&path) {
                        index.add_source(&src);
                    }
                }
                index.files.push(rel);
            }
        }
        index
    }

    pub fn add_source(&mut self, src: &str) {
        let toks = tokens(src);
        for k in 0..toks.len() {
            let Token::Ident(word) = &toks[k] else { continue };
            let next = ident_at(&toks, k + 1);
            match (word.as_str(), next) {
                ("fn" | "const" | "static", Some(name)) => {
                    self.items.insert(name.to_string());
                }
                ("mod", Some(name)) => {
                    self.modules.insert(name.to_string());
                }
                ("macro_rules", _) => {
                    if let Some(name) = ident_at(&toks, k + 2) {
                        self.items.insert(name.to_string());
                    }
                }
                ("struct" | "union" | "enum" | "trait", Some(name)) => {
                    self.types.insert(name.to_string());
                    if let Some(body) = body_after(&toks, k + 2) {
                        let members = self.members.entry(name.to_string()).or_default();
                        members.extend(declared_in(&toks[body.clone()], word));
                    }
                }
                ("type", Some(name)) => {
                    self.types.insert(name.to_string());
                }
                ("impl", _) => {
                    if let (Some(self_ty), Some(body)) = (impl_self_type(&toks, k + 1), body_after(&toks, k + 1)) {
                        let members = self.members.entry(self_ty).or_default();
                        members.extend(declared_in(&toks[body], "impl"));
                    }
                }
                _ => {}
            }
        }
    }
}

fn ident_at(toks: &[Token], k: usize) -> Option<&str> {
    match toks.get(k) {
        Some(Token::Ident(name)) => Some(name),
        _ => None,
    }
}

fn is_punct(tok: Option<&Token>, c: char) -> bool {
    tok == Some(&Token::Punct(c))
}

/// The tokens inside the braces of the item whose header starts at `from`: None for a
/// tuple or unit struct, or a declaration without a body.
fn body_after(toks: &[Token], from: usize) -> Option<std::ops::Range<usize>> {
    let open = (from..toks.len()).find(|&j| matches!(toks[j], Token::Punct('{' | ';')))?;
    if !is_punct(toks.get(open), '{') || tuple_header(&toks[from..open]) {
        return None;
    }
    let mut depth = 0usize;
    for (j, tok) in toks.iter().enumerate().skip(open) {
        match tok {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + 1..j);
                }
            }
            _ => {}
        }
    }
    None
}

/// `struct Name(A, B);`: a parenthesis outside any generics, before any `where` (an impl's
/// header may hold `Fn(A) -> B` in its generics, or `impl Trait for (A, B)`, which has no
/// named type anyway).
fn tuple_header(header: &[Token]) -> bool {
    let mut angle = 0i32;
    for tok in header {
        match tok {
            Token::Punct('<') => angle += 1,
            Token::Punct('>') => angle -= 1,
            Token::Punct('(') if angle == 0 => return true,
            Token::Ident(word) if word == "where" => return false,
            _ => {}
        }
    }
    false
}

/// The type an `impl` block is for: the last path segment before its generics, after `for`
/// where the block implements a trait.
fn impl_self_type(toks: &[Token], from: usize) -> Option<String> {
    let open = (from..toks.len()).find(|&j| matches!(toks[j], Token::Punct('{' | ';')))?;
    let mut header = &toks[from..open];
    if is_punct(header.first(), '<') {
        let mut angle = 0i32;
        let end = header.iter().position(|t| {
            match t {
                Token::Punct('<') => angle += 1,
                Token::Punct('>') => angle -= 1,
                _ => {}
            }
            angle == 0
        })?;
        header = &header[end + 1..];
    }
    if let Some(at) = header.iter().position(|t| *t == Token::Ident("for".into())) {
        header = &header[at + 1..];
    }
    let mut last = None;
    for tok in header {
        match tok {
            Token::Punct('<') => break,
            Token::Ident(word) if word == "where" => break,
            Token::Ident(word) if word != "dyn" && word != "mut" => last = Some(word.clone()),
            _ => {}
        }
    }
    last
}

/// What a body declares at its own level: methods, associated items, fields, variants.
fn declared_in(body: &[Token], kind: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut depth = 0usize;
    for (j, tok) in body.iter().enumerate() {
        match tok {
            Token::Punct('{' | '(' | '[') => depth += 1,
            Token::Punct('}' | ')' | ']') => depth = depth.saturating_sub(1),
            Token::Ident(word) if depth == 0 => {
                let next = body.get(j + 1);
                let prev = j.checked_sub(1).and_then(|p| body.get(p));
                match (kind, word.as_str()) {
                    (_, "fn" | "const" | "type") => {
                        if let Some(name) = ident_at(body, j + 1) {
                            found.push(name.to_string());
                        }
                    }
                    ("struct" | "union", _) if is_punct(next, ':') && !is_punct(body.get(j + 2), ':') => {
                        found.push(word.clone())
                    }
                    ("enum", _) if prev.is_none() || is_punct(prev, ',') || is_punct(prev, ']') => {
                        found.push(word.clone())
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    found
}
