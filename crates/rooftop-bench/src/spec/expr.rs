//! The size expressions of a kernel spec (`"ceil(N / 64)"`, `"(K/128)*N"`, `"2*M*N*K"`).
//!
//! Grammar (whitespace ignored):
//!
//! ```text
//! expr  := term (("+" | "-") term)*
//! term  := unary (("*" | "/" | "%") unary)*
//! unary := "-" unary | atom
//! atom  := NUMBER | NAME | NAME "(" expr ("," expr)* ")" | "(" expr ")"
//! ```
//!
//! `NUMBER` is a decimal integer (`4096`, `1_000_000`) or a decimal fraction (`0.5`);
//! `NAME` is a size variable of the spec (case-sensitive). Functions: `ceil(x)`,
//! `floor(x)`, `min(a, b, ...)`, `max(a, b, ...)`.
//!
//! Semantics: every value is an exact rational number (a 128-bit numerator over a
//! 128-bit denominator), so `/` is exact division and `ceil(N / 64)` is the ceiling of
//! the true quotient; `a % b` is `a - b * floor(a / b)` (for positive integers the usual
//! remainder). Where the spec needs an integer (buffer lengths, grid sizes, scalars,
//! sizes) the value must be a whole number, else the evaluation fails and says so
//! (`N / 64` with N = 100 is 25/16: write `ceil(N / 64)` or `floor(N / 64)`); FLOP and
//! byte counts of a `work` model may be fractional. Division by zero and results beyond
//! 128 bits are errors, never panics or silent wrap-around.

use std::fmt;
use thiserror::Error;

/// Why an expression could not be parsed or evaluated: a message and the character
/// (0-based, in `char`s) it refers to.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}{}", .at.map(|a| format!(" at character {}", a + 1)).unwrap_or_default())]
pub struct ExprError {
    /// 0-based character offset in the expression text; `None` when the error is about
    /// the whole value (not a whole number, out of range).
    pub at: Option<usize>,
    pub message: String,
}

fn err<T>(at: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError { at: Some(at), message: message.into() })
}

/// An exact rational number, always in lowest terms with a positive denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rational {
    /// The integer `n`.
    pub fn int(n: i128) -> Rational {
        Rational { num: n, den: 1 }
    }

    /// `num / den` in lowest terms; `None` when `den` is zero.
    pub fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let (mut num, mut den) = (num / g, den / g);
        if den < 0 {
            num = num.checked_neg()?;
            den = den.checked_neg()?;
        }
        Some(Rational { num, den })
    }

    pub fn numerator(self) -> i128 {
        self.num
    }

    pub fn denominator(self) -> i128 {
        self.den
    }

    /// The value when it is a whole number.
    pub fn as_integer(self) -> Option<i128> {
        (self.den == 1).then_some(self.num)
    }

    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }

    fn ceil(self) -> i128 {
        -((-self.num).div_euclid(self.den))
    }

    fn add(self, o: Rational) -> Option<Rational> {
        let num = self.num.checked_mul(o.den)?.checked_add(o.num.checked_mul(self.den)?)?;
        Rational::new(num, self.den.checked_mul(o.den)?)
    }

    fn sub(self, o: Rational) -> Option<Rational> {
        self.add(Rational { num: o.num.checked_neg()?, den: o.den })
    }

    fn mul(self, o: Rational) -> Option<Rational> {
        // Cross-reduce first so that products of large sizes stay in range.
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        Rational::new(
            (self.num / g1).checked_mul(o.num / g2)?,
            (self.den / g2).checked_mul(o.den / g1)?,
        )
    }

    /// `None` on overflow; division by zero is checked by the caller.
    fn div(self, o: Rational) -> Option<Rational> {
        self.mul(Rational::new(o.den, o.num)?)
    }

    fn lt(self, o: Rational) -> bool {
        // Denominators are positive: compare cross products (in f64 if they overflow).
        match (self.num.checked_mul(o.den), o.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => a < b,
            _ => self.to_f64() < o.to_f64(),
        }
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Ceil,
    Floor,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(Rational),
    Var { name: String, at: usize },
    Neg(Box<Node>),
    Bin { op: BinOp, at: usize, lhs: Box<Node>, rhs: Box<Node> },
    Call { func: Func, at: usize, args: Vec<Node> },
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    text: String,
    node: Node,
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expr {
    /// Parses `text`; the error names the offending character.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let chars: Vec<char> = text.chars().collect();
        let mut p = Parser { chars: &chars, pos: 0, depth: 0 };
        p.skip_ws();
        if p.pos == chars.len() {
            return err(0, "empty expression (expected a number, a size variable or a function)");
        }
        let node = p.expr()?;
        p.skip_ws();
        if let Some(&c) = chars.get(p.pos) {
            let hint = if c == ')' { "an unmatched `)`" } else { "an operator" };
            return err(p.pos, format!("unexpected `{c}` (expected {hint} or the end)"));
        }
        Ok(Expr { text: text.to_string(), node })
    }

    /// The constant `n`.
    pub fn constant(n: u64) -> Expr {
        Expr { text: n.to_string(), node: Node::Num(Rational::int(i128::from(n))) }
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every variable it names, with the character offset of its first use.
    pub fn variables(&self) -> Vec<(&str, usize)> {
        fn walk<'a>(n: &'a Node, out: &mut Vec<(&'a str, usize)>) {
            match n {
                Node::Num(_) => {}
                Node::Var { name, at } => {
                    if !out.iter().any(|(v, _)| *v == name) {
                        out.push((name, *at));
                    }
                }
                Node::Neg(x) => walk(x, out),
                Node::Bin { lhs, rhs, .. } => {
                    walk(lhs, out);
                    walk(rhs, out);
                }
                Node::Call { args, .. } => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut out = Vec::new();
        walk(&self.node, &mut out);
        out
    }

    /// Checks that every variable is one of `known` (before anything runs).
    pub fn check_variables(&self, known: &[&str]) -> Result<(), ExprError> {
        for (v, at) in self.variables() {
            if !known.contains(&v) {
                let list = if known.is_empty() {
                    "there are none: give `sizes`".to_string()
                } else {
                    format!("expected one of {}", known.join(", "))
                };
                return err(at, format!("unknown variable `{v}` ({list})"));
            }
        }
        Ok(())
    }

    /// The exact value with `vars` giving each variable's value.
    pub fn eval(&self, vars: &dyn Fn(&str) -> Option<i128>) -> Result<Rational, ExprError> {
        eval(&self.node, vars)
    }

    /// The value as a whole number in `0..=max`.
    pub fn eval_int(
        &self,
        vars: &dyn Fn(&str) -> Option<i128>,
        max: u64,
    ) -> Result<u64, ExprError> {
        let v = self.eval(vars)?;
        let Some(i) = v.as_integer() else {
            return Err(ExprError {
                at: None,
                message: format!(
                    "the value {v} (= {}) is not a whole number (use ceil(...) or floor(...))",
                    v.to_f64()
                ),
            });
        };
        u64::try_from(i).ok().filter(|&u| u <= max).ok_or_else(|| ExprError {
            at: None,
            message: format!("the value {i} is not in 0..={max}"),
        })
    }
}

fn eval(n: &Node, vars: &dyn Fn(&str) -> Option<i128>) -> Result<Rational, ExprError> {
    let overflow =
        |at: usize| ExprError { at: Some(at), message: "the value overflows 128 bits".to_string() };
    match n {
        Node::Num(r) => Ok(*r),
        Node::Var { name, at } => vars(name).map(Rational::int).ok_or_else(|| ExprError {
            at: Some(*at),
            message: format!("unknown variable `{name}`"),
        }),
        Node::Neg(x) => {
            let v = eval(x, vars)?;
            Rational::new(v.num.checked_neg().ok_or_else(|| overflow(0))?, v.den)
                .ok_or_else(|| overflow(0))
        }
        Node::Bin { op, at, lhs, rhs } => {
            let (a, b) = (eval(lhs, vars)?, eval(rhs, vars)?);
            let r = match op {
                BinOp::Add => a.add(b),
                BinOp::Sub => a.sub(b),
                BinOp::Mul => a.mul(b),
                BinOp::Div | BinOp::Rem if b.num == 0 => {
                    return err(*at, "division by zero (the right side is 0 here)")
                }
                BinOp::Div => a.div(b),
                BinOp::Rem => a.div(b).and_then(|q| {
                    let f = Rational::int(q.floor());
                    a.sub(b.mul(f)?)
                }),
            };
            r.ok_or_else(|| overflow(*at))
        }
        Node::Call { func, at, args } => {
            let vals = args.iter().map(|a| eval(a, vars)).collect::<Result<Vec<_>, _>>()?;
            match func {
                Func::Ceil => Ok(Rational::int(vals[0].ceil())),
                Func::Floor => Ok(Rational::int(vals[0].floor())),
                Func::Min => Ok(vals.iter().copied().reduce(|a, b| if b.lt(a) { b } else { a }))
                    .and_then(|v| v.ok_or_else(|| overflow(*at))),
                Func::Max => Ok(vals.iter().copied().reduce(|a, b| if a.lt(b) { b } else { a }))
                    .and_then(|v| v.ok_or_else(|| overflow(*at))),
            }
        }
    }
}

/// Nesting limit: deeper input is refused rather than overflowing the stack.
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.chars.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<Node, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(self.pos, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        let mut lhs = self.term()?;
        while let Some(c @ ('+' | '-')) = self.peek() {
            let at = self.pos;
            self.pos += 1;
            let rhs = self.term()?;
            let op = if c == '+' { BinOp::Add } else { BinOp::Sub };
            lhs = Node::Bin { op, at, lhs: Box::new(lhs), rhs: Box::new(rhs) };
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn term(&mut self) -> Result<Node, ExprError> {
        let mut lhs = self.unary()?;
        while let Some(c @ ('*' | '/' | '%')) = self.peek() {
            let at = self.pos;
            self.pos += 1;
            let rhs = self.unary()?;
            let op = match c {
                '*' => BinOp::Mul,
                '/' => BinOp::Div,
                _ => BinOp::Rem,
            };
            lhs = Node::Bin { op, at, lhs: Box::new(lhs), rhs: Box::new(rhs) };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        if self.peek() == Some('-') {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return err(self.pos, format!("nested deeper than {MAX_DEPTH} levels"));
            }
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Neg(Box::new(inner)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Node, ExprError> {
        let start = self.pos;
        match self.peek() {
            None => err(self.pos, "unexpected end (expected a number, a variable or `(`)"),
            Some('(') => {
                self.pos += 1;
                let inner = self.expr()?;
                if self.peek() == Some(')') {
                    self.pos += 1;
                    Ok(inner)
                } else {
                    err(self.pos, format!("missing `)` for the `(` at character {}", start + 1))
                }
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let start = self.pos;
                while self.chars.get(self.pos).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                    self.pos += 1;
                }
                let name: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('(') {
                    let func = match name.as_str() {
                        "ceil" => Func::Ceil,
                        "floor" => Func::Floor,
                        "min" => Func::Min,
                        "max" => Func::Max,
                        _ => {
                            return err(
                                start,
                                format!(
                                    "unknown function `{name}` (expected ceil, floor, min or max)"
                                ),
                            )
                        }
                    };
                    self.pos += 1;
                    let mut args = vec![self.expr()?];
                    while self.peek() == Some(',') {
                        self.pos += 1;
                        args.push(self.expr()?);
                    }
                    if self.peek() != Some(')') {
                        return err(self.pos, format!("missing `)` to close `{name}(`"));
                    }
                    self.pos += 1;
                    let one = matches!(func, Func::Ceil | Func::Floor);
                    if one && args.len() != 1 {
                        return err(
                            start,
                            format!("`{name}` takes 1 argument, got {}", args.len()),
                        );
                    }
                    if !one && args.len() < 2 {
                        return err(start, format!("`{name}` takes at least 2 arguments, got 1"));
                    }
                    Ok(Node::Call { func, at: start, args })
                } else {
                    Ok(Node::Var { name, at: start })
                }
            }
            Some(c) => err(
                self.pos,
                format!("unexpected `{c}` (expected a number, a size variable, a function or `(`)"),
            ),
        }
    }

    fn number(&mut self) -> Result<Node, ExprError> {
        let start = self.pos;
        let mut num: i128 = 0;
        let mut den: i128 = 1;
        let mut seen_dot = false;
        let mut digits = 0;
        while let Some(&c) = self.chars.get(self.pos) {
            if c.is_ascii_digit() {
                num = num
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(i128::from(c as u8 - b'0')))
                    .ok_or_else(|| ExprError {
                    at: Some(start),
                    message: "the number does not fit 128 bits".to_string(),
                })?;
                if seen_dot {
                    den = den.checked_mul(10).ok_or_else(|| ExprError {
                        at: Some(start),
                        message: "too many decimals".to_string(),
                    })?;
                }
                digits += 1;
            } else if c == '_' && digits > 0 {
            } else if c == '.' && !seen_dot {
                seen_dot = true;
            } else {
                break;
            }
            self.pos += 1;
        }
        if digits == 0 {
            return err(start, "a number needs digits");
        }
        if self.chars.get(self.pos).is_some_and(|c| c.is_alphabetic()) {
            return err(
                self.pos,
                format!(
                    "unexpected `{}` after a number (write `*` to multiply)",
                    self.chars[self.pos]
                ),
            );
        }
        Rational::new(num, den)
            .map(Node::Num)
            .ok_or_else(|| ExprError { at: Some(start), message: "bad number".to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<i128> {
        match name {
            "M" => Some(128),
            "N" | "K" => Some(4096),
            "Z" => Some(0),
            "odd" => Some(100),
            _ => None,
        }
    }

    fn int(s: &str) -> u64 {
        Expr::parse(s).unwrap().eval_int(&vars, u64::MAX).unwrap()
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(int("2*M*N*K"), 2 * 128 * 4096 * 4096);
        assert_eq!(int("1 + 2 * 3"), 7);
        assert_eq!(int("(1 + 2) * 3"), 9);
        assert_eq!(int("10 - 4 - 3"), 3);
        assert_eq!(int("(K/128)*N"), 32 * 4096);
        assert_eq!(int("K*N/8"), 4096 * 4096 / 8);
        assert_eq!(int("-3 + 5"), 2);
        assert_eq!(int("1_000 * 2"), 2000);
        assert_eq!(int("0.5 * 8"), 4);
        assert_eq!(int("17 % 5"), 2);
        assert_eq!(int("-7 % 5 + 5"), 8); // -7 % 5 = 3 (floor semantics)
    }

    #[test]
    fn division_is_exact_and_ceil_applies_to_the_true_quotient() {
        assert_eq!(int("ceil(odd / 64)"), 2);
        assert_eq!(int("floor(odd / 64)"), 1);
        assert_eq!(int("ceil(N / 64)"), 64);
        // (odd / 64) * 64 is exactly odd: no truncation on the way.
        assert_eq!(int("odd / 64 * 64"), 100);
        assert_eq!(int("min(M, N, 7)"), 7);
        assert_eq!(int("max(M, ceil(odd/3))"), 128);
        let e = Expr::parse("odd / 64").unwrap().eval_int(&vars, u64::MAX).unwrap_err();
        assert!(e.message.contains("25/16") && e.message.contains("ceil"), "{e}");
        let r = Expr::parse("odd / 64").unwrap().eval(&vars).unwrap();
        assert_eq!((r.numerator(), r.denominator()), (25, 16));
    }

    #[test]
    fn errors_name_the_character() {
        let cases = [
            ("ceil(N / 6x)", 10, "after a number"),
            ("M +", 3, "unexpected end"),
            ("(M + N", 6, "missing `)`"),
            ("M N", 2, "unexpected `N`"),
            ("M + )", 4, "unexpected `)`"),
            ("sqrt(M)", 0, "unknown function `sqrt`"),
            ("ceil(M, N)", 0, "takes 1 argument"),
            ("min(M)", 0, "at least 2"),
            ("M $ 2", 2, "unexpected `$`"),
            ("", 0, "empty"),
            ("M)", 1, "unmatched"),
        ];
        for (text, at, what) in cases {
            let e = Expr::parse(text).unwrap_err();
            assert_eq!(e.at, Some(at), "{text}: {e}");
            assert!(e.message.contains(what), "{text}: {e}");
        }
        let e = Expr::parse("M * Q + N").unwrap().check_variables(&["M", "N", "K"]).unwrap_err();
        assert_eq!(e.at, Some(4));
        assert!(e.to_string().contains("unknown variable `Q` (expected one of M, N, K)"), "{e}");
        assert!(e.to_string().ends_with("at character 5"), "{e}");
        let e = Expr::parse("N / Z").unwrap().eval(&vars).unwrap_err();
        assert_eq!(e.at, Some(2));
        assert!(e.message.contains("division by zero"));
        let e = Expr::parse("N % (M - 128)").unwrap().eval(&vars).unwrap_err();
        assert!(e.message.contains("division by zero"));
    }

    #[test]
    fn overflow_and_range_are_errors() {
        let big = "N*N*N*N*N*N*N*N*N*N*N*N*N";
        assert!(Expr::parse(big).unwrap().eval(&vars).unwrap_err().message.contains("overflow"));
        assert!(Expr::parse("99999999999999999999999999999999999999999999")
            .unwrap_err()
            .message
            .contains("128 bits"));
        let e = Expr::parse("M - N").unwrap().eval_int(&vars, u64::MAX).unwrap_err();
        assert!(e.message.contains("not in 0.."), "{e}");
        let e = Expr::parse("N").unwrap().eval_int(&vars, 100).unwrap_err();
        assert!(e.message.contains("0..=100"), "{e}");
        let deep = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(Expr::parse(&deep).unwrap_err().message.contains("nested"));
    }

    #[test]
    fn variables_are_listed_once_in_order() {
        let e = Expr::parse("ceil(N / 64) * M + N").unwrap();
        assert_eq!(e.variables(), vec![("N", 5), ("M", 15)]);
    }

    proptest::proptest! {
        #[test]
        fn parsing_and_evaluating_never_panics(s in "[-+*/%()0-9MNK ,.a-z_]{0,40}") {
            if let Ok(e) = Expr::parse(&s) {
                let _ = e.eval(&vars);
                let _ = e.eval_int(&vars, u64::MAX);
            }
        }

        #[test]
        fn ceil_div_matches_integer_formula(n in 1u64..1_000_000, d in 1u64..5000) {
            let e = Expr::parse("ceil(a / b)").unwrap();
            let v = e.eval_int(&|s| match s { "a" => Some(n.into()), "b" => Some(d.into()), _ => None }, u64::MAX).unwrap();
            proptest::prop_assert_eq!(v, n.div_ceil(d));
        }
    }
}
