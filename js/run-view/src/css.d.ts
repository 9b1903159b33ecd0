// esbuild bundles the widget's stylesheet beside the script (run_view.css next to run_view.js).
declare module "*.css";
