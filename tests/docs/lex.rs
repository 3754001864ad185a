//! Just enough of a Rust lexer to find what a source file defines: identifiers and the
//! punctuation that delimits items, with comments, strings, characters and lifetimes skipped
//! (a brace inside a string must not end an impl block).

#[derive(Debug, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    Punct(char),
}

pub fn tokens(src: &str) -> Vec<Token> {
    let s = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if s[i..].starts_with(b"//") {
            i = skip_to(s, i, b"\n");
        } else if s[i..].starts_with(b"/*") {
            i = block_comment_end(s, i);
        } else if c == b'r' && raw_string_hashes(s, i).is_some() {
            let hashes = raw_string_hashes(s, i).unwrap_or(0);
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            i = skip_to(s, i + 2 + hashes, &close);
        } else if c == b'b' && s.get(i + 1) == Some(&b'"') {
            i = string_end(s, i + 1);
        } else if c == b'"' {
            i = string_end(s, i);
        } else if c == b'\'' {
            i = quote_end(s, i);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(String::from_utf8_lossy(&s[start..i]).into_owned()));
        } else if c.is_ascii_digit() {
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_' || s[i] == b'.') {
                i += 1;
            }
        } else {
            out.push(Token::Punct(c as char));
            i += 1;
        }
    }
    out
}

/// The index just past the first `end` at or after `from` (or the end of the text).
fn skip_to(s: &[u8], from: usize, end: &[u8]) -> usize {
    (from..s.len()).find(|&j| s[j..].starts_with(end)).map_or(s.len(), |j| j + end.len())
}

fn block_comment_end(s: &[u8], from: usize) -> usize {
    let (mut depth, mut i) = (0usize, from);
    while i < s.len() {
        if s[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if s[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// `r"`, `r#"`, `r##"`...: how many hashes, or None where this `r` starts no raw string.
fn raw_string_hashes(s: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_') {
        return None;
    }
    let hashes = s[i + 1..].iter().take_while(|&&b| b == b'#').count();
    (s.get(i + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

fn string_end(s: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// A character literal ('x', '\n', '\u{..}') is skipped whole; a lifetime ('a) only its quote.
fn quote_end(s: &[u8], open: usize) -> usize {
    if s.get(open + 1) == Some(&b'\\') {
        return skip_to(s, open + 2, b"'");
    }
    let ch_len = s.get(open + 1).map_or(1, |&b| utf8_len(b));
    if s.get(open + 1 + ch_len) == Some(&b'\'') {
        open + 2 + ch_len
    } else {
        open + 1
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}
