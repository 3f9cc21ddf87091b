// Parse LogQL expressions with Grafana's own grammar (@grafana/lezer-logql, what Grafana's Loki
// query editor uses). stdin: {"name": "expr", ...}; stdout: {"name": {"errors": [offsets],
// "nodes": [node type names]}}. argv[2] is the node_modules folder holding the grammar.
const { parser } = require(process.argv[2] + "/@grafana/lezer-logql");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const [name, expr] of Object.entries(input)) {
  const errors = [];
  const nodes = new Set();
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
      nodes.add(node.type.name);
    },
  });
  out[name] = { errors, nodes: [...nodes] };
}
console.log(JSON.stringify(out));
