// The oEmbed card (/embed/passages/...): tells the framing page its exact height.
// Resize protocol (docs/web.md): {type: "newsquarry:resize", height} to the parent, on load
// and whenever the card's size changes. The frame is sandboxed without allow-same-origin,
// so the host identifies the sender by event.source (the iframe's contentWindow), not origin.
const post = () => {
  if (window.parent === window) return;
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  window.parent.postMessage({ type: "newsquarry:resize", height }, "*");
};
new ResizeObserver(post).observe(document.documentElement);
