"""Every annotation ingress-nginx v1.13 reads, with its parser group and risk (facts of the controller).

The group is the name of the controller's parser (``annotations.go`` ``NewAnnotationExtractor``),
which its messages print (``annotation group ConfigurationSnippet contains risky annotation based
on ingress configuration``); the risk is the annotation's ``parser.AnnotationRisk``, compared with
the ConfigMap's ``annotations-risk-level`` (default ``High``): an Ingress carrying an annotation
riskier than that is refused by the admission webhook and skipped by the controller.

``SIMULATED`` marks what knetsim runs on every request path (route, trace, the live entry); the
rest is recognised, reported as not simulated, and listed by ``migrate ingress``.
"""

from __future__ import annotations

from dataclasses import dataclass

LOW, MEDIUM, HIGH, CRITICAL = 0, 1, 2, 3
RISK_NAMES = {"low": LOW, "medium": MEDIUM, "high": HIGH, "critical": CRITICAL}


@dataclass(frozen=True, slots=True)
class Entry:
    group: str
    risk: int
    simulated: bool


def _e(group: str, risk: int, simulated: bool = False) -> Entry:
    return Entry(group, risk, simulated)


S = True  # simulated

CATALOG: dict[str, Entry] = {
    # redirects and rewrites
    "app-root": _e("Rewrite", MEDIUM, S),
    "force-ssl-redirect": _e("Rewrite", MEDIUM, S),
    "preserve-trailing-slash": _e("Rewrite", MEDIUM, S),
    "rewrite-target": _e("Rewrite", MEDIUM, S),
    "ssl-redirect": _e("Rewrite", LOW, S),
    "use-regex": _e("Rewrite", LOW, S),
    "from-to-www-redirect": _e("Redirect", LOW, S),
    "permanent-redirect": _e("Redirect", MEDIUM, S),
    "permanent-redirect-code": _e("Redirect", LOW, S),
    "temporal-redirect": _e("Redirect", MEDIUM, S),
    "temporal-redirect-code": _e("Redirect", LOW, S),
    "relative-redirects": _e("Redirect", LOW, S),
    "x-forwarded-prefix": _e("XForwardedPrefix", MEDIUM, S),
    "upstream-vhost": _e("UpstreamVhost", LOW, S),
    "server-alias": _e("Aliases", HIGH, S),
    "use-port-in-redirects": _e("UsePortInRedirects", LOW),
    # canary
    "canary": _e("Canary", LOW, S),
    "canary-weight": _e("Canary", LOW, S),
    "canary-weight-total": _e("Canary", LOW, S),
    "canary-by-header": _e("Canary", MEDIUM, S),
    "canary-by-header-value": _e("Canary", MEDIUM, S),
    "canary-by-header-pattern": _e("Canary", MEDIUM, S),
    "canary-by-cookie": _e("Canary", MEDIUM, S),
    # access
    "allowlist-source-range": _e("Allowlist", MEDIUM, S),
    "whitelist-source-range": _e("Allowlist", MEDIUM, S),
    "denylist-source-range": _e("Denylist", MEDIUM, S),
    "auth-type": _e("BasicDigestAuth", LOW, S),
    "auth-secret": _e("BasicDigestAuth", MEDIUM, S),
    "auth-secret-type": _e("BasicDigestAuth", LOW, S),
    "auth-realm": _e("BasicDigestAuth", MEDIUM, S),
    "auth-url": _e("ExternalAuth", HIGH, S),
    "auth-method": _e("ExternalAuth", LOW, S),
    "auth-signin": _e("ExternalAuth", HIGH, S),
    "auth-signin-redirect-param": _e("ExternalAuth", MEDIUM, S),
    "auth-response-headers": _e("ExternalAuth", MEDIUM, S),
    "auth-request-redirect": _e("ExternalAuth", MEDIUM, S),
    "auth-snippet": _e("ExternalAuth", CRITICAL, S),
    "auth-cache-key": _e("ExternalAuth", MEDIUM),
    "auth-cache-duration": _e("ExternalAuth", MEDIUM),
    "auth-keepalive": _e("ExternalAuth", LOW),
    "auth-keepalive-share-vars": _e("ExternalAuth", LOW),
    "auth-keepalive-requests": _e("ExternalAuth", LOW),
    "auth-keepalive-timeout": _e("ExternalAuth", LOW),
    "auth-proxy-set-headers": _e("ExternalAuth", MEDIUM),
    "auth-always-set-cookie": _e("ExternalAuth", LOW),
    "enable-global-auth": _e("EnableGlobalAuth", LOW),
    "satisfy": _e("Satisfy", LOW, S),
    "auth-tls-secret": _e("CertificateAuth", MEDIUM),
    "auth-tls-verify-client": _e("CertificateAuth", MEDIUM),
    "auth-tls-verify-depth": _e("CertificateAuth", LOW),
    "auth-tls-error-page": _e("CertificateAuth", HIGH),
    "auth-tls-pass-certificate-to-upstream": _e("CertificateAuth", LOW),
    "auth-tls-match-cn": _e("CertificateAuth", HIGH),
    # CORS
    "enable-cors": _e("CorsConfig", LOW, S),
    "cors-allow-origin": _e("CorsConfig", MEDIUM, S),
    "cors-allow-methods": _e("CorsConfig", MEDIUM, S),
    "cors-allow-headers": _e("CorsConfig", MEDIUM, S),
    "cors-expose-headers": _e("CorsConfig", MEDIUM, S),
    "cors-allow-credentials": _e("CorsConfig", LOW, S),
    "cors-max-age": _e("CorsConfig", LOW, S),
    # backend
    "backend-protocol": _e("BackendProtocol", LOW, S),
    "service-upstream": _e("ServiceUpstream", LOW, S),
    "upstream-hash-by": _e("UpstreamHashBy", HIGH, S),
    "upstream-hash-by-subset": _e("UpstreamHashBy", LOW),
    "upstream-hash-by-subset-size": _e("UpstreamHashBy", LOW),
    "load-balance": _e("LoadBalancing", LOW),
    "affinity": _e("SessionAffinity", LOW, S),
    "affinity-mode": _e("SessionAffinity", MEDIUM, S),
    "affinity-canary-behavior": _e("SessionAffinity", LOW, S),
    "session-cookie-name": _e("SessionAffinity", MEDIUM, S),
    "session-cookie-path": _e("SessionAffinity", MEDIUM, S),
    "session-cookie-domain": _e("SessionAffinity", MEDIUM, S),
    "session-cookie-expires": _e("SessionAffinity", MEDIUM, S),
    "session-cookie-max-age": _e("SessionAffinity", MEDIUM, S),
    "session-cookie-samesite": _e("SessionAffinity", LOW, S),
    "session-cookie-secure": _e("SessionAffinity", LOW, S),
    "session-cookie-conditional-samesite-none": _e("SessionAffinity", LOW, S),
    "session-cookie-change-on-failure": _e("SessionAffinity", LOW),
    "ssl-passthrough": _e("SSLPassthrough", LOW, S),
    # limits
    "proxy-body-size": _e("Proxy", MEDIUM, S),
    "limit-rps": _e("RateLimit", LOW, S),
    "limit-rpm": _e("RateLimit", LOW, S),
    "limit-connections": _e("RateLimit", LOW, S),
    "limit-burst-multiplier": _e("RateLimit", LOW, S),
    "limit-allowlist": _e("RateLimit", LOW, S),
    "limit-whitelist": _e("RateLimit", LOW, S),
    "limit-rate": _e("RateLimit", LOW),
    "limit-rate-after": _e("RateLimit", LOW),
    # error pages
    "custom-http-errors": _e("CustomHTTPErrors", LOW, S),
    "default-backend": _e("DefaultBackend", LOW, S),
    "disable-proxy-intercept-errors": _e("DisableProxyInterceptErrors", LOW, S),
    # arbitrary configuration
    "configuration-snippet": _e("ConfigurationSnippet", CRITICAL, S),
    "server-snippet": _e("ServerSnippet", CRITICAL, S),
    "stream-snippet": _e("StreamSnippet", CRITICAL, S),
    "modsecurity-snippet": _e("ModSecurity", CRITICAL, S),
    # recognised, not simulated
    "client-body-buffer-size": _e("ClientBodyBufferSize", LOW),
    "connection-proxy-header": _e("Connection", LOW),
    "custom-headers": _e("CustomHeaders", MEDIUM),
    "enable-access-log": _e("Logs", LOW),
    "enable-rewrite-log": _e("Logs", LOW),
    "enable-modsecurity": _e("ModSecurity", LOW),
    "enable-owasp-core-rules": _e("ModSecurity", LOW),
    "modsecurity-transaction-id": _e("ModSecurity", HIGH),
    "enable-opentelemetry": _e("Opentelemetry", LOW),
    "opentelemetry-trust-incoming-span": _e("Opentelemetry", LOW),
    "opentelemetry-operation-name": _e("Opentelemetry", MEDIUM),
    "fastcgi-index": _e("FastCGI", MEDIUM),
    "fastcgi-params-configmap": _e("FastCGI", MEDIUM),
    "http2-push-preload": _e("HTTP2PushPreload", LOW),
    "mirror-request-body": _e("Mirror", LOW),
    "mirror-target": _e("Mirror", HIGH),
    "mirror-host": _e("Mirror", HIGH),
    "proxy-connect-timeout": _e("Proxy", LOW),
    "proxy-send-timeout": _e("Proxy", LOW),
    "proxy-read-timeout": _e("Proxy", LOW),
    "proxy-buffers-number": _e("Proxy", LOW),
    "proxy-buffer-size": _e("Proxy", LOW),
    "proxy-busy-buffers-size": _e("Proxy", LOW),
    "proxy-cookie-path": _e("Proxy", MEDIUM),
    "proxy-cookie-domain": _e("Proxy", MEDIUM),
    "proxy-next-upstream": _e("Proxy", MEDIUM),
    "proxy-next-upstream-timeout": _e("Proxy", LOW),
    "proxy-next-upstream-tries": _e("Proxy", LOW),
    "proxy-request-buffering": _e("Proxy", LOW),
    "proxy-redirect-from": _e("Proxy", MEDIUM),
    "proxy-redirect-to": _e("Proxy", MEDIUM),
    "proxy-buffering": _e("Proxy", LOW),
    "proxy-http-version": _e("Proxy", LOW),
    "proxy-max-temp-file-size": _e("Proxy", LOW),
    "proxy-ssl-secret": _e("ProxySSL", MEDIUM),
    "proxy-ssl-ciphers": _e("ProxySSL", MEDIUM),
    "proxy-ssl-protocols": _e("ProxySSL", LOW),
    "proxy-ssl-name": _e("ProxySSL", HIGH),
    "proxy-ssl-verify": _e("ProxySSL", LOW),
    "proxy-ssl-verify-depth": _e("ProxySSL", LOW),
    "proxy-ssl-server-name": _e("ProxySSL", LOW),
    "ssl-ciphers": _e("SSLCipher", LOW),
    "ssl-prefer-server-ciphers": _e("SSLCipher", LOW),
}

SNIPPETS = ("configuration-snippet", "server-snippet", "stream-snippet", "auth-snippet", "modsecurity-snippet")


def risk_name(risk: int) -> str:
    return ("Low", "Medium", "High", "Critical")[risk]
