"use strict";(self.rspackChunkpi_notebook=self.rspackChunkpi_notebook||[]).push([[0],{18(e,t,n){var r=n(19),o=n.n(r),a=n(20),i=(n.n(a))()(o());i.push([e.id,`/* The status bar item: "pi: streaming", "pi: retry in 3 s", "pi: settled (aborted)". */
.pi-StatusItem {
  padding: 0 4px;
  white-space: nowrap;
}

.pi-StatusItem[data-pi-active='true'] {
  color: var(--jp-warn-color0, #e65100);
  font-weight: 600;
}

/* The notebook toolbar's "Stop agent run" button, shown only while a run is active. */
.pi-StopAgentRun .jp-ToolbarButtonComponent {
  color: var(--jp-error-color1, #d32f2f);
}

.pi-StopAgentRun .jp-ToolbarButtonComponent-label {
  color: var(--jp-error-color1, #d32f2f);
  font-weight: 600;
}

.pi-StopAgentRun .jp-icon3[fill] {
  fill: var(--jp-error-color1, #d32f2f);
}

/* Cells the agent made or changed (tag pi-agent): a coloured edge and a "pi \xb7 run N" badge (src/marks.ts). */
.jp-Cell.pi-AgentCell .jp-InputArea-editor {
  box-shadow: inset 3px 0 0 var(--jp-brand-color2, #64b5f6);
}

.jp-Cell.pi-AgentCell .jp-InputArea[data-pi-agent] {
  position: relative;
}

.jp-Cell.pi-AgentCell .jp-InputArea[data-pi-agent]::after {
  content: attr(data-pi-agent);
  position: absolute;
  bottom: 3px;
  right: 6px;
  padding: 0 6px;
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0, 10px);
  line-height: 16px;
  color: var(--jp-ui-inverse-font-color1, #fff);
  background: var(--jp-brand-color1, #1976d2);
  opacity: 0.85;
  pointer-events: none;
  z-index: 1;
}

/* A saved run whose widget the kernel no longer has: its static copy, under a line saying so (src/staticCopy.ts). */
.pi-static-copy-note {
  padding: 2px 8px;
  margin-bottom: 4px;
  border-left: 3px solid var(--jp-border-color1, #bdbdbd);
  color: var(--jp-ui-font-color2, #616161);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
}
`,""]),n.d(t,{},{A:i})},20(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var n="",r=void 0!==t[5];return t[4]&&(n+="@supports (".concat(t[4],") {")),t[2]&&(n+="@media ".concat(t[2]," {")),r&&(n+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),n+=e(t),r&&(n+="}"),t[2]&&(n+="}"),t[4]&&(n+="}"),n}).join("")},t.i=function(e,n,r,o,a){"string"==typeof e&&(e=[[null,e,void 0]]);var i={};if(r)for(var p=0;p<this.length;p++){var s=this[p][0];null!=s&&(i[s]=!0)}for(var c=0;c<e.length;c++){var l=[].concat(e[c]);r&&i[l[0]]||(void 0!==a&&(void 0===l[5]||(l[1]="@layer".concat(l[5].length>0?" ".concat(l[5]):""," {").concat(l[1],"}")),l[5]=a),n&&(l[2]&&(l[1]="@media ".concat(l[2]," {").concat(l[1],"}")),l[2]=n),o&&(l[4]?(l[1]="@supports (".concat(l[4],") {").concat(l[1],"}"),l[4]=o):l[4]="".concat(o)),t.push(l))}},t}},19(e){e.exports=function(e){return e[1]}},12(e){var t=[];function n(e){for(var n=-1,r=0;r<t.length;r++)if(t[r].identifier===e){n=r;break}return n}function r(e,r){for(var o={},a=[],i=0;i<e.length;i++){var p=e[i],s=r.base?p[0]+r.base:p[0],c=o[s]||0,l="".concat(s," ").concat(c);o[s]=c+1;var u=n(l),d={css:p[1],media:p[2],sourceMap:p[3],supports:p[4],layer:p[5]};if(-1!==u)t[u].references++,t[u].updater(d);else{var f=function(e,t){var n=t.domAPI(t);return n.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&n.update(e=t):n.remove()}}(d,r);r.byIndex=i,t.splice(i,0,{identifier:l,updater:f,references:1})}a.push(l)}return a}e.exports=function(e,o){var a=r(e=e||[],o=o||{});return function(e){e=e||[];for(var i=0;i<a.length;i++){var p=n(a[i]);t[p].references--}for(var s=r(e,o),c=0;c<a.length;c++){var l=n(a[c]);0===t[l].references&&(t[l].updater(),t.splice(l,1))}a=s}}},14(e){var t={};e.exports=function(e,n){var r=function(e){if(void 0===t[e]){var n=document.querySelector(e);if(window.HTMLIFrameElement&&n instanceof window.HTMLIFrameElement)try{n=n.contentDocument.head}catch(e){n=null}t[e]=n}return t[e]}(e);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(n)}},16(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},15(e,t,n){e.exports=function(e){var t=n.nc;t&&e.setAttribute("nonce",t)}},13(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(n){var r,o,a;r="",n.supports&&(r+="@supports (".concat(n.supports,") {")),n.media&&(r+="@media ".concat(n.media," {")),(o=void 0!==n.layer)&&(r+="@layer".concat(n.layer.length>0?" ".concat(n.layer):""," {")),r+=n.css,o&&(r+="}"),n.media&&(r+="}"),n.supports&&(r+="}"),(a=n.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(r,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},17(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},11(e,t,n){var r=n(12),o=n.n(r),a=n(13),i=n.n(a),p=n(14),s=n.n(p),c=n(15),l=n.n(c),u=n(16),d=n.n(u),f=n(17),v=n.n(f),h=n(18),m={};m.styleTagTransform=v(),m.setAttributes=l(),m.insert=s().bind(null,"head"),m.domAPI=i(),m.insertStyleElement=d(),o()(h.A,m),h.A&&h.A.locals&&h.A.locals}}]);