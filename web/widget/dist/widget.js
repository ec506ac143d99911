/* Parley chat widget: built from web/widget/widget.ts by scripts/build-widget.ts */
"use strict";(()=>{var B=`
/* Important :host rules win over the page's own, even its !important ones (CSS Scoping). */
:host { all: initial !important; display: block !important; position: fixed !important; right: 20px !important; bottom: 20px !important; z-index: 2147483000 !important; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif !important; color: #1a1a1a !important; }
*, *::before, *::after { box-sizing: border-box; }
.launcher { display: flex; align-items: center; gap: 8px; border: 0; border-radius: 999px; padding: 12px 18px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); }
.launcher:hover { background: #173fab; }
.launcher:focus-visible, button:focus-visible, textarea:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.panel { position: absolute; right: 0; bottom: 60px; width: min(360px, calc(100vw - 40px)); height: min(520px, calc(100vh - 100px)); display: flex; flex-direction: column; background: #fff; border: 1px solid #c9ced6; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px; background: #1f4fd1; color: #fff; }
h2 { margin: 0; font-size: 16px; font-weight: 600; }
.close, .restart { border: 0; background: transparent; color: inherit; font: inherit; cursor: pointer; padding: 4px 8px; border-radius: 6px; }
.close { font-size: 20px; line-height: 1; }
.log { margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 8px; }
.msg { margin: 0; max-width: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
.msg.agent { align-self: flex-start; background: #eef1f6; color: #1a1a1a; }
.msg.user { align-self: flex-end; background: #1f4fd1; color: #fff; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e1e4ea; }
textarea { flex: 1; resize: none; min-height: 40px; max-height: 120px; padding: 8px 10px; border: 1px solid #8a93a3; border-radius: 8px; font: inherit; color: #1a1a1a; background: #fff; }
.send { border: 0; border-radius: 8px; padding: 0 14px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.send:disabled { background: #6b7280; cursor: default; }
.status { margin: 0; padding: 0 12px 8px; min-height: 1.4em; font-size: 13px; color: #4a5160; }
`;function A(p){let N=p.dataset.publicKey??"",_=p.dataset.agentId??"",L=new URL(p.src,location.href).origin,m=`parley-widget:${_}`,b=p.dataset.title??"Chat with us",x=document.createElement("div");x.setAttribute("data-parley-widget","");let y=x.attachShadow({mode:"open"});y.innerHTML=`
<style>${B}</style>
<section class="panel" id="panel" role="dialog" aria-modal="false" aria-labelledby="title" hidden>
  <header>
    <h2 id="title"></h2>
    <div>
      <button type="button" class="restart" id="restart">New chat</button>
      <button type="button" class="close" id="close" aria-label="Close chat">×</button>
    </div>
  </header>
  <div class="log" id="log" role="log" aria-live="polite" aria-relevant="additions" aria-label="Messages"></div>
  <p class="status" id="status" role="status"></p>
  <form id="form">
    <label class="sr-only" for="input">Your message</label>
    <textarea id="input" rows="1" maxlength="10000" placeholder="Type a message…" autocomplete="off"></textarea>
    <button type="submit" class="send" id="send">Send</button>
  </form>
</section>
<button type="button" class="launcher" id="launcher" aria-expanded="false" aria-controls="panel"></button>`;let o=e=>y.getElementById(e),u=o("panel"),i=o("launcher"),f=o("log"),$=o("status"),I=o("form"),d=o("input"),j=o("send");o("title").textContent=b,i.textContent=b;let n=z(),w=!1;function z(){try{let e=sessionStorage.getItem(m);return e?JSON.parse(e):void 0}catch{return}}function l(){try{n?sessionStorage.setItem(m,JSON.stringify(n)):sessionStorage.removeItem(m)}catch{}}function g(e){let t=document.createElement("p");t.className=`msg ${e.role}`;let a=document.createElement("span");a.className="sr-only",a.textContent=e.role==="agent"?"Agent: ":"You: ",t.append(a,document.createTextNode(e.content)),f.append(t),f.scrollTop=f.scrollHeight}function s(e){$.textContent=e}function S(e){return(e??[]).filter(t=>(t.role==="agent"||t.role==="user")&&typeof t.content=="string"&&t.content!=="").map(t=>({role:t.role,content:t.content}))}async function T(e,t,a){let r=await fetch(L+e,{method:"POST",headers:{"content-type":"application/json",...a?{authorization:`Bearer ${N}`}:{}},body:JSON.stringify(t),credentials:"omit"}),c=await r.json().catch(()=>({}));return{status:r.status,json:c}}async function k(){s("Connecting…");let e;try{e=await T("/public/chat/start",{agent_id:_},!0)}catch{return s("Chat unavailable right now."),!1}let{status:t,json:a}=e;if(t!==201||!a.chat_id||!a.chat_secret)return s(a.message?`Chat unavailable: ${a.message}`:"Chat unavailable right now."),!1;n={chat_id:a.chat_id,chat_secret:a.chat_secret,messages:[],ended:a.chat_status==="ended",open:!0};for(let r of S(a.message_with_tool_calls))n.messages.push(r),g(r);return l(),s(""),!0}function h(e){w=e,j.disabled=e,d.setAttribute("aria-busy",String(e))}async function C(e){if(!(w||e.trim()==="")){h(!0);try{if((!n||n.ended)&&!await k())return;let t=n,a={role:"user",content:e};t.messages.push(a),g(a),d.value="",l(),s("Agent is typing…");let{status:r,json:c}=await T(`/public/chat/${encodeURIComponent(t.chat_id)}/message`,{content:e,chat_secret:t.chat_secret},!1);if(r===404){n=void 0,l(),s("This conversation has ended. Send a message to start a new one.");return}if(r!==200){s(c.message?`Not sent: ${c.message}`:"Not sent; try again.");return}for(let H of S(c.messages))t.messages.push(H),g(H);t.ended=c.chat_status==="ended",l(),s(t.ended?"The conversation has ended.":"")}catch{s("Network error; try again.")}finally{h(!1)}}}function M(e=!0){u.hidden=!1,i.setAttribute("aria-expanded","true"),i.setAttribute("aria-label",`Close ${b.toLowerCase()}`),n&&(n.open=!0,l()),e&&d.focus(),!n&&!w&&(h(!0),k().finally(()=>h(!1)))}function v(){u.hidden=!0,i.setAttribute("aria-expanded","false"),i.removeAttribute("aria-label"),n&&(n.open=!1,l()),i.focus()}i.addEventListener("click",()=>u.hidden?M():v()),o("close").addEventListener("click",v),o("restart").addEventListener("click",()=>{n&&!n.ended&&fetch(`${L}/public/chat/${encodeURIComponent(n.chat_id)}/end`,{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({chat_secret:n.chat_secret}),credentials:"omit"}).catch(()=>{}),n=void 0,l(),f.replaceChildren(),s(""),d.focus()}),y.addEventListener("keydown",e=>{e.key==="Escape"&&!u.hidden&&(e.preventDefault(),v())}),d.addEventListener("keydown",e=>{e.key==="Enter"&&!e.shiftKey&&!e.isComposing&&(e.preventDefault(),C(d.value))}),I.addEventListener("submit",e=>{e.preventDefault(),C(d.value)});for(let e of n?.messages??[])g(e);document.body.append(x),n?.open&&M(!1)}var E=document.currentScript;E&&(document.body?A(E):document.addEventListener("DOMContentLoaded",()=>A(E),{once:!0}));})();
