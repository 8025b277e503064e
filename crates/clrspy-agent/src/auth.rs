//! Authentication, one layer over the whole app (see `routes`): every route but the public
//! ones ([`PUBLIC`]) — and every unknown path — needs `Authorization: Bearer X`, which passes
//! when X's SHA-256 equals a configured hash (compared in constant time, every hash tried) or
//! X is a JWT the configured key verifies. Anything else is a 401 with `WWW-Authenticate:
//! Bearer` and a body that never says which part was wrong. A caller that passes is named for
//! the audit log by a [`Caller`]: never the key or the token itself.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::jwk::JwtVerifier;

/// The routes open without credentials: the only ones. A route added anywhere else is behind
/// authentication whether its author thought of it or not. Literal paths (no parameters).
pub(crate) const PUBLIC: &[&str] = &["/health"];

/// How many hex digits of a key's SHA-256 name it in the audit log: enough to tell a fleet's
/// keys apart, and only of the hash (which the config holds anyway), never of the key.
const KEY_ID_HEX: usize = 12;

/// Who called, as the audit log names them: `key:` and the first hex digits of the key's
/// SHA-256, `jwt:` and the token's subject, or `open` when no credentials are configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Caller(pub String);

/// Who may call the API.
#[derive(Clone, Debug)]
pub(crate) struct Authenticator {
    hashes: Vec<[u8; 32]>,
    jwt: Option<JwtVerifier>,
    open: bool,
}

impl Authenticator {
    /// Accepts keys with these hashes and JWTs this verifier passes.
    pub(crate) fn new(hashes: Vec<[u8; 32]>, jwt: Option<JwtVerifier>) -> Authenticator {
        Authenticator {
            hashes,
            jwt,
            open: false,
        }
    }

    /// Accepts every request (`--insecure` with no credentials configured).
    pub(crate) fn open() -> Authenticator {
        Authenticator {
            hashes: Vec::new(),
            jwt: None,
            open: true,
        }
    }

    /// True when the `Authorization` header carries valid credentials.
    #[cfg(test)]
    pub(crate) fn allows(&self, authorization: Option<&HeaderValue>) -> bool {
        self.identify(authorization).is_some()
    }

    /// Who the `Authorization` header's credentials are, when they are valid.
    pub(crate) fn identify(&self, authorization: Option<&HeaderValue>) -> Option<Caller> {
        if self.open {
            return Some(Caller("open".into()));
        }
        let token = authorization
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)?;
        let digest = crate::keys::digest(token);
        // Every hash is compared, whatever the first ones gave.
        let mut hit = subtle::Choice::from(0);
        for h in &self.hashes {
            hit |= h.ct_eq(&digest);
        }
        if bool::from(hit) {
            // The digest is the hash that matched.
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            return Some(Caller(format!("key:{}", &hex[..KEY_ID_HEX])));
        }
        // A JWT has three dot-separated parts; an API key has none.
        match &self.jwt {
            Some(j) if token.bytes().filter(|&b| b == b'.').count() == 2 => j
                .verify(token)
                .map(|sub| Caller(format!("jwt:{}", sub.escape_default()))),
            _ => None,
        }
    }
}

/// The token of `Bearer TOKEN` (the scheme's case ignored).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The middleware, laid once over the whole app (each route and the fallback, after
/// routing): a request for a route outside [`PUBLIC`] without valid credentials ends here
/// with a 401; one with them goes on carrying its [`Caller`].
pub(crate) async fn require(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    if let Some(caller) = auth.identify(req.headers().get(header::AUTHORIZATION)) {
        req.extensions_mut().insert(caller);
        return next.run(req).await;
    }
    let public = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| PUBLIC.contains(&p.as_str()));
    if public {
        return next.run(req).await;
    }
    let mut resp = ApiError::new(StatusCode::UNAUTHORIZED, "invalid credentials").into_response();
    resp.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::jwk::{DEFAULT_AUDIENCE, DEFAULT_ISSUER};
    use base64::Engine;
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};

    pub(crate) const SUBJECT: &str = "ae5473b6-8dad-498d-b915-ffffffffffff";

    fn hv(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }

    /// An EC key pair: its signing key and its public JWK in dotnet-monitor's form (PascalCase
    /// members, nulls, base64url of the JSON).
    pub(crate) fn ec_key(
        alg: &'static rcgen::SignatureAlgorithm,
        crv: &str,
    ) -> (EncodingKey, String) {
        let kp = rcgen::KeyPair::generate_for(alg).unwrap();
        let raw = kp.public_key_raw();
        assert_eq!(raw[0], 4, "uncompressed point");
        let n = (raw.len() - 1) / 2;
        let jwk = serde_json::json!({
            "AdditionalData": {}, "Alg": null, "Crv": crv, "D": null, "KeyOps": [],
            "Kty": "EC", "X": b64(&raw[1..1 + n]), "Y": b64(&raw[1 + n..]), "X5c": [],
        });
        let public = b64(jwk.to_string().as_bytes());
        (EncodingKey::from_ec_der(&kp.serialize_der()), public)
    }

    pub(crate) fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    pub(crate) fn token(
        key: &EncodingKey,
        alg: Algorithm,
        exp: u64,
        aud: &str,
        sub: &str,
    ) -> String {
        let claims = serde_json::json!({
            "aud": aud, "iss": DEFAULT_ISSUER, "sub": sub, "exp": exp, "jti": "x",
        });
        encode(&Header::new(alg), &claims, key).unwrap()
    }

    fn with_jwt(public: String) -> Authenticator {
        let v = JwtVerifier::new(&public, None, None, SUBJECT).unwrap();
        Authenticator::new(Vec::new(), Some(v))
    }

    #[test]
    fn api_keys_by_hash() {
        let k = crate::keys::from_bytes(b"0123456789abcdef0123456789abcdef");
        let other = crate::keys::from_bytes(&[7; 32]);
        let auth = Authenticator::new(
            vec![crate::keys::digest(&other.key), crate::keys::digest(&k.key)],
            None,
        );
        assert!(auth.allows(Some(&hv(&format!("Bearer {}", k.key)))));
        assert!(auth.allows(Some(&hv(&format!("bearer   {} ", other.key)))));
        assert!(!auth.allows(None));
        assert!(!auth.allows(Some(&hv(&format!("Basic {}", k.key)))));
        assert!(!auth.allows(Some(&hv("Bearer "))));
        assert!(!auth.allows(Some(&hv(&format!("Bearer {}x", k.key)))));
        // The hash itself is not a key.
        assert!(!auth.allows(Some(&hv(&format!("Bearer {}", k.hash)))));
        assert!(Authenticator::open().allows(None));
    }

    #[test]
    fn jwts_es256_and_es384() {
        for (alg, jalg, crv) in [
            (&rcgen::PKCS_ECDSA_P256_SHA256, Algorithm::ES256, "P-256"),
            (&rcgen::PKCS_ECDSA_P384_SHA384, Algorithm::ES384, "P-384"),
        ] {
            let (key, public) = ec_key(alg, crv);
            let auth = with_jwt(public);
            let good = token(&key, jalg, now() + 600, DEFAULT_AUDIENCE, SUBJECT);
            assert!(auth.allows(Some(&hv(&format!("Bearer {good}")))), "{crv}");
            let expired = token(&key, jalg, now() - 3600, DEFAULT_AUDIENCE, SUBJECT);
            assert!(
                !auth.allows(Some(&hv(&format!("Bearer {expired}")))),
                "{crv}"
            );
            let aud = token(&key, jalg, now() + 600, "https://elsewhere", SUBJECT);
            assert!(!auth.allows(Some(&hv(&format!("Bearer {aud}")))), "{crv}");
            let sub = token(&key, jalg, now() + 600, DEFAULT_AUDIENCE, "someone-else");
            assert!(!auth.allows(Some(&hv(&format!("Bearer {sub}")))), "{crv}");
        }
    }

    #[test]
    fn jwts_rs256_with_an_rsa_jwk() {
        // A 2048-bit test key made with `openssl genrsa` (PKCS#1 DER) and its modulus.
        let der = include_bytes!("../tests/data/rsa-test-key.der");
        let n = include_str!("../tests/data/rsa-test-key.n").trim();
        let key = EncodingKey::from_rsa_der(der);
        let public = b64(serde_json::json!({"kty": "RSA", "n": n, "e": "AQAB"})
            .to_string()
            .as_bytes());
        let auth = with_jwt(public);
        for alg in [Algorithm::RS256, Algorithm::RS512, Algorithm::PS256] {
            let good = token(&key, alg, now() + 600, DEFAULT_AUDIENCE, SUBJECT);
            assert!(auth.allows(Some(&hv(&format!("Bearer {good}")))), "{alg:?}");
        }
        let expired = token(
            &key,
            Algorithm::RS256,
            now() - 3600,
            DEFAULT_AUDIENCE,
            SUBJECT,
        );
        assert!(!auth.allows(Some(&hv(&format!("Bearer {expired}")))));
        // An EC key's token against the RSA key.
        let (ec, _) = ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
        let other = token(
            &ec,
            Algorithm::ES256,
            now() + 600,
            DEFAULT_AUDIENCE,
            SUBJECT,
        );
        assert!(!auth.allows(Some(&hv(&format!("Bearer {other}")))));
    }

    #[test]
    fn jwt_signed_by_another_key_or_tampered() {
        let (key, public) = ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
        let (other, _) = ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
        let auth = with_jwt(public);
        let forged = token(
            &other,
            Algorithm::ES256,
            now() + 600,
            DEFAULT_AUDIENCE,
            SUBJECT,
        );
        assert!(!auth.allows(Some(&hv(&format!("Bearer {forged}")))));
        let good = token(
            &key,
            Algorithm::ES256,
            now() + 600,
            DEFAULT_AUDIENCE,
            SUBJECT,
        );
        let mut parts: Vec<&str> = good.split('.').collect();
        let body = b64(
            serde_json::json!({"aud": DEFAULT_AUDIENCE, "iss": DEFAULT_ISSUER, "sub": SUBJECT,
                "exp": now() + 99999})
            .to_string()
            .as_bytes(),
        );
        parts[1] = &body;
        assert!(!auth.allows(Some(&hv(&format!("Bearer {}", parts.join("."))))));
        // alg "none" is never accepted.
        let none = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), parts[1]);
        assert!(!auth.allows(Some(&hv(&format!("Bearer {none}")))));
        // The right algorithm family is taken from the key, not the token.
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({"aud": DEFAULT_AUDIENCE, "iss": DEFAULT_ISSUER, "sub": SUBJECT,
                "exp": now() + 600}),
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert!(!auth.allows(Some(&hv(&format!("Bearer {hs}")))));
    }

    #[test]
    fn public_key_forms() {
        use crate::jwk::VerifyKey;
        let (_, public) = ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
        assert!(VerifyKey::parse(&public).is_ok());
        // Padded base64url and the bare JSON are read too.
        assert!(VerifyKey::parse(&format!("{public}==")).is_ok());
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&public)
            .unwrap();
        // RFC 7517's member names (lower case), as bare JSON.
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let rfc: serde_json::Map<String, serde_json::Value> = v
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_lowercase(), v.clone()))
            .collect();
        let rfc = serde_json::Value::Object(rfc).to_string();
        assert!(rfc.contains("\"kty\":\"EC\""), "{rfc}");
        assert!(VerifyKey::parse(&rfc).is_ok());
        let e = VerifyKey::parse("not base64!").unwrap_err();
        assert!(e.to_string().contains("base64"), "{e}");
        let secret = b64(br#"{"kty":"oct","k":"c2VjcmV0"}"#);
        assert!(VerifyKey::parse(&secret).is_err());
        let private = b64(br#"{"kty":"EC","crv":"P-256","x":"AA","y":"AA","d":"AA"}"#);
        assert!(VerifyKey::parse(&private)
            .unwrap_err()
            .to_string()
            .contains("private"));
        let p521 = b64(br#"{"kty":"EC","crv":"P-521","x":"AA","y":"AA"}"#);
        assert!(VerifyKey::parse(&p521).is_err());
    }
}
