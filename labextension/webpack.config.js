// Merged into @jupyter/builder's rspack config (package.json: jupyterlab.webpackConfig).
// Module and chunk ids follow the modules' order instead of hashes of their absolute paths, so the same
// source and lock file build a byte-identical bundle in any checkout; the build check relies on that.
module.exports = {
  optimization: {
    moduleIds: 'natural',
    chunkIds: 'natural'
  }
};
