// /embed: tell the framing page how tall the results are, so it can size the iframe.
// The parent receives {type: "newsquarry:resize", height} messages (any origin may frame /embed).
const widget = document.querySelector("newsquarry-results");
const post = () => {
  if (window.parent === window) return;
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  window.parent.postMessage({ type: "newsquarry:resize", height }, "*");
};
if (widget) {
  // posted at once (layout is computed on demand): offscreen frames get no animation frames
  widget.addEventListener("newsquarry-load", post);
  widget.addEventListener("newsquarry-error", post);
  new ResizeObserver(post).observe(document.documentElement);
}
